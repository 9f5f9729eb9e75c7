#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Small POSIX file helpers. Reading the bytes and the mode through one descriptor means the
/// permission check on a config file is about the very file whose contents we parse.
enum FileAccess {
    struct Failure: Error {
        let errno: Int32
        var reason: String { String(cString: strerror(errno)) }
    }

    struct Contents {
        let bytes: [UInt8]
        /// Permission bits (`st_mode & 0o7777`).
        let mode: UInt32
    }

    enum Existence { case missing, present, inaccessible(Failure) }

    static func existence(of path: String) -> Existence {
        var info = stat()
        if stat(path, &info) == 0 { return .present }
        let code = errno
        return code == ENOENT || code == ENOTDIR ? .missing : .inaccessible(Failure(errno: code))
    }

    /// Reads a whole regular file. A directory fails with `EISDIR`.
    static func read(_ path: String) throws(Failure) -> Contents {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(errno: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Failure(errno: errno) }
        guard (info.st_mode & S_IFMT) != S_IFDIR else { throw Failure(errno: EISDIR) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(fd, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw Failure(errno: errno)
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return Contents(bytes: bytes, mode: UInt32(info.st_mode) & 0o7777)
    }

    /// `mkdir -p` where each directory created gets `mode`; finally sets `mode` on `path` itself.
    static func createDirectory(_ path: String, mode: UInt32) throws(Failure) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode_t(mode)) != 0, errno != EEXIST { throw Failure(errno: errno) }
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw Failure(errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { throw Failure(errno: ENOTDIR) }
        if UInt32(info.st_mode) & 0o777 != mode, chmod(path, mode_t(mode)) != 0 { throw Failure(errno: errno) }
    }
}

/// `read(2)`, named apart from `FileAccess.read(_:)`.
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    read(fd, buffer, count)
}

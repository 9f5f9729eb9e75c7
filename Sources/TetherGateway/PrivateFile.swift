import Foundation
import Logging

/// The log holds prompts, transcripts and commands: only its owner may read it. Directories the
/// gateway creates for it are 0700, the database file is created 0600 before SQLite opens it
/// (SQLite gives its `-wal` and `-shm` files the database's mode), and an existing file that
/// others may read is tightened, with a warning.
enum PrivateFile {
    static func prepare(_ path: String, logger: Logger) throws(EventLog.OpenError) {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !FileManager.default.fileExists(atPath: directory) {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw EventLog.OpenError(path: path, reason: "cannot create its directory: \(error.localizedDescription)")
            }
        }
        for file in [path, path + "-wal", path + "-shm"] {
            // Only the database itself is created; the others are tightened if they are there.
            let descriptor = file == path ? open(file, O_RDONLY | O_CREAT | O_CLOEXEC, 0o600) : open(file, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                if file == path { throw EventLog.OpenError(path: path, reason: String(cString: strerror(errno))) }
                continue
            }
            defer { close(descriptor) }
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { continue }
            if info.st_mode & 0o077 != 0 {
                if fchmod(descriptor, 0o600) == 0 {
                    logger.warning("\(file) was readable by others; it is 0600 now (it holds prompts and transcripts)")
                } else {
                    logger.warning("\(file) is readable by others and cannot be made 0600: \(String(cString: strerror(errno)))")
                }
            }
        }
    }
}

import ArgumentParser
import TetherCore

/// `--listen HOST:PORT` of `tether serve` and `tether simulate`, read once, when the arguments
/// are, by the one reader of that syntax (`HostPort(listening:)`), so a command holds the
/// address and never parses it again.
enum ListenArgument {
    static func parse(_ text: String) throws -> HostPort {
        guard let address = HostPort(listening: text) else {
            throw ValidationError("--listen takes HOST:PORT, e.g. 127.0.0.1:7420, [::1]:7420 or :7420 (loopback); port 0 picks a free one")
        }
        return address
    }
}

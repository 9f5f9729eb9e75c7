@testable import TetherTestSupport
import Testing

/// The root of every TetherSSH test. Most start their own sshd; all run one at a time so that
/// descriptor counts, ports and timings are not disturbed by each other.
@Suite("TetherSSH", .serialized, .timeLimit(.minutes(2)))
struct TetherSSHSuite {}

/// Failures of the simulators themselves (not of the simulated protocols).
public struct SimulatorError: Error, Sendable, CustomStringConvertible {
    private enum Kind: Sendable {
        case timedOut(String)
        case cannotListen(String)
        case notRunning
    }

    private let kind: Kind

    static func timedOut(_ what: String) -> SimulatorError { SimulatorError(kind: .timedOut(what)) }
    static func cannotListen(_ why: String) -> SimulatorError { SimulatorError(kind: .cannotListen(why)) }
    static var notRunning: SimulatorError { SimulatorError(kind: .notRunning) }

    public var description: String {
        switch kind {
        case .timedOut(let what): "simulator timed out \(what)"
        case .cannotListen(let why): "simulator could not listen: \(why)"
        case .notRunning: "simulator is not running: call start() first"
        }
    }
}

import ArgumentParser
import TetherConfig
import TetherCore
import TetherNet
import TetherAdapterSupport

/// Runs a command body and turns every failure into a clear message on stderr and the exit code
/// the design assigns (sysexits). Nothing here prints a secret: messages never carry one.
func reportingFailures(_ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch let error as TetherError {
        try fail(error)
    } catch let error as ConfigError {
        LineOutput.standardError.write("tether: configuration error: \(error.description)\n")
        throw ExitCode(ConfigError.exitCode)
    } catch let error as NetError {
        try fail(error.tetherError(service: "the server"))
    } catch is CancellationError {
        throw ExitCode(130)
    }
}

private func fail(_ error: TetherError) throws -> Never {
    LineOutput.standardError.write("tether: \(error.hintRewritten(for: Invocation.current).description)\n")
    throw ExitCode(error.exitCode)
}

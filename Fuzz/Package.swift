// swift-tools-version:6.0
// libFuzzer targets for Tether's wire decoders (`make fuzz`; see README, "Fuzzing").
//
// A package of its own so that `-sanitize=fuzzer,address` never reaches the main build. The
// root package exports only the `tether` executable, so the library targets the fuzzers need
// are declared again here over the very same sources: `Tether` is a symlink to `../Sources`.
// Keep these declarations in step with the root Package.swift (only the targets fuzzed).
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]
let log = Target.Dependency.product(name: "Logging", package: "swift-log")

/// One executable per fuzz target: its top-level code runs libFuzzer's driver on its check.
func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies, swiftSettings: strict)
}

let package = Package(
    name: "TetherFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .systemLibrary(name: "CCurl", path: "Tether/CCurl", pkgConfig: "libcurl"),
        .target(name: "TetherCore", path: "Tether/TetherCore", swiftSettings: strict),
        .target(name: "TetherNet", dependencies: ["CCurl", "TetherCore", log], path: "Tether/TetherNet", swiftSettings: strict),
        .target(name: "TetherCodexProtocol", dependencies: ["TetherCore"], path: "Tether/TetherCodexProtocol",
                swiftSettings: strict),
        .target(name: "TetherOpenCode", dependencies: ["TetherCore", "TetherNet", log], path: "Tether/TetherOpenCode",
                swiftSettings: strict),
        .target(name: "TetherCodexWorker", dependencies: ["TetherCore", "TetherNet", "TetherCodexProtocol", log],
                path: "Tether/TetherCodexWorker", swiftSettings: strict),
        .target(name: "TetherCodexMonitor", dependencies: ["TetherCore", "TetherNet", "TetherCodexProtocol", log],
                path: "Tether/TetherCodexMonitor", swiftSettings: strict),
        .target(name: "TetherNotification", dependencies: ["TetherCore", "TetherNet", log],
                path: "Tether/TetherNotification", swiftSettings: strict),

        // libFuzzer's driver entry, and the input splitting and checks the fuzzers share.
        .systemLibrary(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", "TetherCore", "TetherNet"], swiftSettings: strict),
        fuzzer("FuzzSSEDecoder", ["TetherNet"]),
        fuzzer("FuzzLineFramer", ["TetherNet"]),
        fuzzer("FuzzWebSocketFrames", ["TetherNet"]),
        fuzzer("FuzzJSONParser", ["TetherCore"]),
        fuzzer("FuzzOpenCodeWire", ["TetherNet", "TetherCore", "TetherOpenCode"]),
        fuzzer("FuzzCodexWorkerWire", ["TetherNet", "TetherCore", "TetherCodexWorker"]),
        fuzzer("FuzzCodexMonitorWire", ["TetherNet", "TetherCore", "TetherCodexMonitor"]),
        fuzzer("FuzzNotificationWire", ["TetherNet", "TetherCore", "TetherNotification"]),
    ]
)

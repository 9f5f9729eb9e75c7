// swift-tools-version:6.0
// libFuzzer targets for Tether's wire decoders (`make fuzz`; see README, "Fuzzing").
//
// A package of its own so that `-sanitize=fuzzer,address` never reaches the main build; it
// links the root package's library products, so the fuzzers always see today's sources.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny")]

/// A product of the root package (`..`).
func tether(_ name: String) -> Target.Dependency { .product(name: name, package: "Tether") }

/// One executable per fuzz target: its top-level code runs libFuzzer's driver on its check.
func fuzzer(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzSupport"] + dependencies, swiftSettings: strict)
}

let package = Package(
    name: "TetherFuzz",
    platforms: [.macOS(.v14)],
    dependencies: [
        .package(name: "Tether", path: ".."),
    ],
    targets: [
        // libFuzzer's driver entry, and the input splitting and checks the fuzzers share.
        .systemLibrary(name: "CLibFuzzer"),
        .target(name: "FuzzSupport", dependencies: ["CLibFuzzer", tether("TetherCore"), tether("TetherNet")], swiftSettings: strict),
        fuzzer("FuzzSSEDecoder", [tether("TetherNet")]),
        fuzzer("FuzzLineFramer", [tether("TetherNet")]),
        fuzzer("FuzzWebSocketFrames", [tether("TetherNet")]),
        fuzzer("FuzzJSONParser", [tether("TetherStreaming")]),
        fuzzer("FuzzOpenCodeWire", [tether("TetherNet"), tether("TetherCore"), tether("TetherStreaming"), tether("TetherOpenCode")]),
        fuzzer("FuzzOpenCode2Wire", [tether("TetherNet"), tether("TetherCore"), tether("TetherStreaming"), tether("TetherOpenCode")]),
        fuzzer("FuzzCodexWorkerWire", [tether("TetherNet"), tether("TetherCore"), tether("TetherStreaming"), tether("TetherCodexWorker")]),
        fuzzer("FuzzCodexMonitorWire", [tether("TetherNet"), tether("TetherCore"), tether("TetherStreaming"), tether("TetherCodexMonitor")]),
        fuzzer("FuzzNotificationWire", [tether("TetherNet"), tether("TetherCore"), tether("TetherStreaming"), tether("TetherNotification")]),
    ]
)

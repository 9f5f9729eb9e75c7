// swift-tools-version:6.0
// Tether — a command-line gateway for remote AI coding agents.
// Layers (see ../shared/design.md): tether (CLI) → TetherCore (domain) → adapters → TetherNet / TetherSSH,
// all on TetherStreaming (the stream kernel).
import PackageDescription
let wip: [String] = []

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6), .enableUpcomingFeature("ExistentialAny"),
    // Generic code used across modules (RecentMap, BatchChannel) specialized where it is used:
    // unspecialized, every call looked its tuple metadata up at run time (bench/PROFILE.md).
    .unsafeFlags(["-cross-module-optimization"], .when(configuration: .release)),
]

/// Release builds through `make` pack the binary's relative relocations (RELR; lld, from the
/// toolchain): the loader reads 30 KB of them at every start instead of 3.6 MB, and every
/// command's peak memory is a few MB lower (bench/PROFILE.md, "Relocations packed"). Such a
/// binary needs glibc 2.36 or later to load, so the Makefile asks for it
/// (`TETHER_PACK_RELOCATIONS=1`) only where the build machine has that glibc (Debian 12 does).
let packedRelocations: [LinkerSetting] = Context.environment["TETHER_PACK_RELOCATIONS"] == "1"
    ? [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"],
                    .when(platforms: [.linux], configuration: .release))]
    : []

let package = Package(
    name: "Tether",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "tether", targets: ["tether"]),
        // The layers the fuzz targets (Fuzz/, a package of its own) link: the transport and the
        // adapters' wire decoders.
        .library(name: "TetherStreaming", targets: ["TetherStreaming"]),
        .library(name: "TetherCore", targets: ["TetherCore"]),
        .library(name: "TetherNet", targets: ["TetherNet"]),
        .library(name: "TetherOpenCode", targets: ["TetherOpenCode"]),
        .library(name: "TetherCodexWorker", targets: ["TetherCodexWorker"]),
        .library(name: "TetherCodexMonitor", targets: ["TetherCodexMonitor"]),
        .library(name: "TetherNotification", targets: ["TetherNotification"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", exact: "0.6.0"),
        .package(url: "https://github.com/swhitty/FlyingFox", exact: "0.27.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        // Already part of Hummingbird's graph; named because the gateway writes to NIO channels itself.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/vapor/postgres-nio", exact: "1.33.2"),
    ],
    targets: [
        // C shims over the system libraries: typed wrappers for variadic and macro APIs.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CLibSSH2", pkgConfig: "libssh2", providers: [.apt(["libssh2-1-dev"])]),
        // libcrypto's SHA-1 and SHA-256, for TetherDigest.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The QR code of `tether pair`'s link, drawn on the terminal.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        // SQLite's C API (the library GRDB links): the gateway log's batch insert binds through it.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),

        // The stream kernel: what makes every stream fast — the bounded batch hand-off and the pump,
        // the JSON scanner, parser, writer and string table, the bounded maps and sets, descriptor I/O.
        // Every unsafe or unchecked construct of the streams lives here, each saying what keeps it safe.
        .target(name: "TetherStreaming", swiftSettings: strict),
        // Domain: sessions, turns, parts, approvals, events, the Backend protocol, the JSONL codec.
        .target(name: "TetherCore", dependencies: ["TetherStreaming"], swiftSettings: strict),
        // The digests (SHA-1, SHA-256) from libcrypto.
        .target(name: "TetherDigest", dependencies: ["CCrypto"], swiftSettings: strict),
        // Transport: libcurl HTTP + streaming, SSE decoding, line framing, reconnect policy.
        .target(name: "TetherNet", dependencies: [
            "CCurl", "TetherDigest", "TetherStreaming", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // What every adapter shares above the transport: how a transport failure reads to a user.
        .target(name: "TetherAdapterSupport", dependencies: ["TetherCore", "TetherNet"], swiftSettings: strict),
        // Tunnel: libssh2 direct-tcpip behind a loopback listener.
        .target(name: "TetherSSH", dependencies: ["CLibSSH2", "TetherDigest", .product(name: "Logging", package: "swift-log")],
                swiftSettings: strict),
        // Config: TOML profiles and tunnels, secret references, XDG paths, state directory.
        .target(name: "TetherConfig", dependencies: ["TetherCore", "TOMLKit"], swiftSettings: strict),
        // Adapters: wire ⇄ domain, one per backend.
        .target(name: "TetherOpenCode", dependencies: [
            "TetherCore", "TetherNet", "TetherStreaming", "TetherAdapterSupport", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Codex's app-server protocol: its items, and its messages → domain events (one mapper for
        // every backend that carries them: codex, CodexMonitor, the Codex Worker's items).
        .target(name: "TetherCodexProtocol", dependencies: ["TetherCore", "TetherStreaming"], swiftSettings: strict),
        // `backend = "codex"`: Codex's own app-server, over ws://, its daemon's socket, or stdio.
        .target(name: "TetherCodexAppServer", dependencies: [
            "TetherCore", "TetherNet", "TetherStreaming", "TetherAdapterSupport", "TetherCodexProtocol", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .target(name: "TetherCodexWorker", dependencies: [
            "TetherCore", "TetherNet", "TetherStreaming", "TetherAdapterSupport", "TetherCodexProtocol", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .target(name: "TetherCodexMonitor", dependencies: [
            "TetherCore", "TetherNet", "TetherStreaming", "TetherAdapterSupport", "TetherCodexProtocol", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .target(name: "TetherNotification", dependencies: [
            "TetherCore", "TetherNet", "TetherStreaming", "TetherAdapterSupport", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // `backend = "gateway"`: another `tether serve`, through its HTTP API and its log's seq.
        .target(name: "TetherGatewayClient", dependencies: [
            "TetherCore", "TetherStreaming", "TetherNet", "TetherAdapterSupport", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Simulators: independent implementations of each backend's wire, for tests, `simulate`, `demo`.
        .target(name: "TetherSim", dependencies: [
            .product(name: "FlyingFox", package: "FlyingFox"),
            .product(name: "FlyingSocks", package: "FlyingFox"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // ACP bridge: `tether acp`, an Agent Client Protocol agent on stdio over any Backend.
        .target(name: "TetherACP", dependencies: [
            "TetherCore", "TetherStreaming", "TetherNet", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Gateway: `tether serve` — the durable event log (SQLite, or PostgreSQL shared by a fleet of
        // replicas) and the HTTP API over every profile.
        // The page's files and the OpenAPI document are real files under Page/, compiled into the
        // binary as byte arrays (`PackageResources.<file_name>`): one binary, nothing else on disk.
        .target(name: "TetherGateway", dependencies: [
            "TetherCore", "TetherStreaming", "CSQLite", "TetherDigest",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
        ], resources: [
            .embedInCode("Page/index.html"), .embedInCode("Page/app.js"), .embedInCode("Page/app.css"),
            .embedInCode("Page/icon.svg"), .embedInCode("Page/icon-192.png"), .embedInCode("Page/icon-512.png"),
            .embedInCode("Page/manifest.webmanifest"), .embedInCode("Page/sw.js"), .embedInCode("Page/openapi.json"),
        ], swiftSettings: strict),
        // jemalloc's settings for the binary (one arena, freed pages returned quickly).
        .target(name: "CMallocSettings"),
        // The command-line interface.
        .executableTarget(name: "tether", dependencies: [
            "CMallocSettings", "CQREncode", "TetherCore", "TetherStreaming", "TetherNet", "TetherAdapterSupport", "TetherACP", "TetherConfig", "TetherSim", "TetherOpenCode", "TetherCodexWorker", "TetherCodexMonitor", "TetherCodexAppServer", "TetherNotification", "TetherGatewayClient", "TetherSSH", "TetherGateway",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict,
        // jemalloc (Debian's libjemalloc-dev) replaces glibc's malloc in the binary: a stream
        // allocates on the network side and frees on the writing side, and glibc's arenas
        // serialize such cross-thread frees on a lock (bench/PROFILE.md).
        linkerSettings: [
            .linkedLibrary("jemalloc", .when(platforms: [.linux])),
        ] + packedRelocations),

        .testTarget(name: "TetherStreamingTests", dependencies: ["TetherStreaming", "TetherTestSupport"], swiftSettings: strict),
        .testTarget(name: "TetherDigestTests", dependencies: ["TetherDigest"], swiftSettings: strict),
        .testTarget(name: "TetherCoreTests", dependencies: ["TetherCore", "TetherStreaming"], swiftSettings: strict),
        .testTarget(name: "TetherGatewayClientTests", dependencies: ["TetherGatewayClient", "TetherCore"], swiftSettings: strict),
        .testTarget(name: "TetherACPTests", dependencies: [
            "TetherACP", "TetherCore", "TetherStreaming", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .testTarget(name: "TetherNetTests", dependencies: [
            "TetherNet", "TetherAdapterSupport", "TetherSim", "TetherTestSupport", .product(name: "FlyingFox", package: "FlyingFox"),
        ], swiftSettings: strict),
        // Fixtures shared by test suites: a real sshd on loopback, child processes.
        .target(name: "TetherTestSupport", dependencies: ["TetherCore", "TetherStreaming"], path: "Tests/TetherTestSupport", swiftSettings: strict),
        .testTarget(name: "TetherSSHTests", dependencies: [
            "TetherSSH", "TetherTestSupport", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .testTarget(name: "TetherConfigTests", dependencies: ["TetherConfig", "TetherCore"], swiftSettings: strict),
        .testTarget(name: "TetherGatewayTests", dependencies: [
            "TetherGateway", "TetherCore", "TetherStreaming", "TetherTestSupport", .product(name: "Logging", package: "swift-log"),
            .product(name: "GRDB", package: "GRDB.swift"),
        ], swiftSettings: strict),
        .testTarget(name: "TetherSimTests", dependencies: [
            "TetherSim", .product(name: "FlyingSocks", package: "FlyingFox"), .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        .testTarget(name: "TetherOpenCodeTests", dependencies: [
            "TetherOpenCode", "TetherCore", "TetherStreaming", "TetherSim", "TetherTestSupport", .product(name: "Logging", package: "swift-log"),
        ],
                    resources: [.copy("Transcripts")], swiftSettings: strict),
        .testTarget(name: "TetherCodexWorkerTests", dependencies: ["TetherCodexWorker", "TetherCore", "TetherStreaming", "TetherNet", "TetherTestSupport"],
                    resources: [.copy("Transcripts")], swiftSettings: strict),
        .testTarget(name: "TetherCodexMonitorTests", dependencies: ["TetherCodexMonitor", "TetherCodexProtocol", "TetherCore", "TetherNet", "TetherStreaming", "TetherTestSupport"],
                    resources: [.copy("Transcripts")], swiftSettings: strict),
        .testTarget(name: "TetherCodexAppServerTests", dependencies: [
            "TetherCodexAppServer", "TetherCodexProtocol", "TetherCore", "TetherNet", "TetherStreaming", .product(name: "Logging", package: "swift-log"),
        ], resources: [.copy("Transcripts")], swiftSettings: strict),
        .testTarget(name: "TetherNotificationTests", dependencies: [
            "TetherNotification", "TetherCore", "TetherStreaming", "TetherNet",
            .product(name: "FlyingFox", package: "FlyingFox"), .product(name: "FlyingSocks", package: "FlyingFox"),
        ], resources: [.copy("Fixtures")], swiftSettings: strict),
        // End-to-end: runs the real `tether` binary as a subprocess.
        .testTarget(name: "TetherCLITests", dependencies: [
            "tether", "TetherSim", "TetherCore", "TetherStreaming", "TetherTestSupport", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
        // Fault injection: the real binary against every simulator through a fault proxy.
        .testTarget(name: "TetherFaultTests", dependencies: [
            "tether", "TetherSim", "TetherCore", "TetherStreaming", "TetherTestSupport", .product(name: "Logging", package: "swift-log"),
        ], swiftSettings: strict),
    ]
)

// swift-tools-version: 6.2
import PackageDescription

/// The same strictness as the TokenKit package: existential `any`, member import visibility, internal imports by
/// default.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .warning),
]

// The examples live in their own package so that TokenKit's graph never sees Hummingbird or NIO.
// Run the demo server: `swift run --package-path Examples demo-auth-server --help`.
/// What each example executable (the two demos and the multi-process worker) depends on.
let appDependencies: [Target.Dependency] = [
    "DemoAppSupport",
    .product(name: "TokenKit", package: "TokenKit"),
    .product(name: "HTTPTypes", package: "swift-http-types"),
    .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
    .product(name: "ArgumentParser", package: "swift-argument-parser"),
]

/// TokenKit's traits: every server trait. In CI, whose one debug tree builds TokenKit with its default traits set to
/// every server trait (TOKENKIT_DEFAULT_TRAITS), TokenKit's defaults: the same set reached the same way, so SwiftPM
/// passes the same flags in the same order and this package reuses that tree's compile of TokenKit.
let tokenKitTraits: Set<Package.Dependency.Trait> =
    Context.environment["TOKENKIT_DEFAULT_TRAITS"] == nil
    ? ["ServerAdapters", "VaporMiddleware", "LifecycleServices", "DistributedTracing"] : [.defaults]

let package = Package(
    name: "TokenKitExamples",
    // Hummingbird 2 needs macOS 14; `Mutex` (Synchronization) needs macOS 15.
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "demo-auth-server", targets: ["demo-auth-server"]),
        .executable(name: "fitiq-demo", targets: ["fitiq-demo"]),
        .executable(name: "lume-demo", targets: ["lume-demo"]),
        .executable(name: "betterauth-demo", targets: ["betterauth-demo"]),
        .executable(name: "clerk-demo", targets: ["clerk-demo"]),
        .executable(name: "diet-backend", targets: ["diet-backend"]),
        .executable(name: "signin-demo", targets: ["signin-demo"]),
    ],
    dependencies: [
        // The library by path, with its server adapters' traits on (the diet backend, the replica worker and the
        // transport benchmark use them), Vapor's (the diet backend's Vapor variant), and the lifecycle and tracing
        // traits: every server trait, as CI's one debug tree builds TokenKit itself, so the Examples reuse its
        // compile of TokenKit instead of compiling it again with other flags.
        .package(name: "TokenKit", path: "..", traits: tokenKitTraits),
        // Hummingbird's default traits, as TokenKit's manifest names it: one set of traits in the graph.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // The replica worker builds its own PostgreSQL pool and HTTP client; the replica test finds the lock holder.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        // The diet backend's Vapor variant (`diet-backend --framework vapor`).
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
    ],
    targets: [
        .target(
            name: "DemoAuthServer",
            dependencies: [
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "demo-auth-server",
            dependencies: [
                "DemoAuthServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // What the demo executables share: the server (in-process or external), options, the transport, output
        // that survives a closed pipe, cleanup on signals, step lines, the summary table.
        .target(
            name: "DemoAppSupport",
            dependencies: [
                "DemoAuthServer",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "TokenKit", package: "TokenKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "fitiq-demo",
            dependencies: appDependencies,
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "lume-demo",
            dependencies: appDependencies,
            swiftSettings: strictSettings
        ),
        // A command-line sign-in through the browser over a loopback redirect, with OpenID Connect.
        .executableTarget(
            name: "signin-demo",
            dependencies: appDependencies + [
                "DemoAuthServer", .product(name: "TokenKitSignIn", package: "TokenKit"),
            ],
            swiftSettings: strictSettings
        ),
        // The diet-app backend (seed 000): verifies the demo issuer's Clerk-style JWTs through its JWKS, on Hummingbird
        // or on Vapor.
        .target(
            name: "DietBackend",
            dependencies: [
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "TokenKitHummingbird", package: "TokenKit"),
                .product(name: "TokenKitVapor", package: "TokenKit"),
                .product(name: "Vapor", package: "vapor"),
                .product(name: "TokenKitAsyncHTTPClient", package: "TokenKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "diet-backend",
            dependencies: [
                "DietBackend",
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The Clerk-like app (seeds 001 and 002) over a simulated Clerk SDK, against the demo issuer and the
        // diet backend, both in-process.
        .target(
            name: "ClerkDemoSupport",
            dependencies: appDependencies + [
                "DemoAuthServer", "DietBackend",
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "clerk-demo",
            dependencies: appDependencies + ["ClerkDemoSupport"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "betterauth-demo",
            dependencies: appDependencies + [.product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strictSettings
        ),
        // One process of the multi-process tests (Tests/FaultTests): several share one file store, or one
        // PostgreSQL table (each process with its own pool).
        .executableTarget(
            name: "session-worker",
            dependencies: appDependencies + [
                .product(name: "TokenKitPostgres", package: "TokenKit"),
                .product(name: "TokenKitAsyncHTTPClient", package: "TokenKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "DemoAppSupportTests",
            dependencies: [
                "DemoAppSupport",
                "DemoAuthServer",
                .product(name: "TokenKit", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // TokenKit against the demo server under injected faults, several processes on one file store, and the demo
        // executables on bad input (closed pipe, DNS failure, TLS mismatch, a silent server, SIGTERM).
        .testTarget(
            name: "FaultTests",
            dependencies: [
                "DemoAppSupport",
                "DemoAuthServer",
                .product(name: "TokenKit", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "HTTPTypesFoundation", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "TokenKitPostgres", package: "TokenKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // The holding proxy (HoldingProxy.swift) in front of django-oauth-toolkit.
                .product(name: "TokenKitAsyncHTTPClient", package: "TokenKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // The shared-session test over the demo server (SharedSessionDemoServerTests.swift).
                .product(name: "PersistenceKeychain", package: "TokenKit"),
                .product(name: "TokenKitKeychainTesting", package: "TokenKit"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ClerkDemoTests",
            dependencies: [
                "ClerkDemoSupport",
                "DemoAuthServer",
                "DietBackend",
                .product(name: "TokenKit", package: "TokenKit"),
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "DemoAuthServerTests",
            dependencies: [
                "DemoAuthServer",
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

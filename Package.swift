// swift-tools-version: 6.2
import PackageDescription

/// Settings every TokenKit target shares (see STYLE.md, "Package.swift").
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .warning),
]

/// `strictSettings` without `ExistentialAny`, for tests that compile app code as the apps wrote it.
let appCallSiteSettings: [SwiftSetting] = [
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .warning),
]

let package = Package(
    name: "TokenKit",
    // What `Clock` and `Duration` need. Locks are AuthToken's LockedValue (OSAllocatedUnfairLock on Apple
    // platforms), not Synchronization.Mutex (macOS 15, iOS 18); AuthSessionModel (@Observable) is marked
    // `@available(macOS 14, iOS 17, ...)`.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        .library(name: "TokenKit", targets: ["TokenKit"]),
        .library(name: "AuthToken", targets: ["AuthToken"]),
        .library(name: "Persistence", targets: ["Persistence"]),
        .library(name: "PersistenceKeychain", targets: ["PersistenceKeychain"]),
        .library(name: "NetworkRetry", targets: ["NetworkRetry"]),
        .library(name: "TokenRefresh", targets: ["TokenRefresh"]),
        .library(name: "TokenVerification", targets: ["TokenVerification"]),
        .library(name: "TokenKitTesting", targets: ["TokenKitTesting"]),
        .library(name: "TokenKitLogCheck", targets: ["TokenKitLogCheck"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // The metrics API only (no backend, no NIO): a no-op until the app bootstraps one.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
    ],
    targets: [
        // Foundation only: a consumer who just parses tokens builds nothing else.
        .target(name: "AuthToken"),
        .target(
            name: "Persistence",
            dependencies: [
                "AuthToken",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "PersistenceKeychain", dependencies: ["AuthToken", "Persistence"]),
        // A child process for the Persistence crash and lock tests (not a product), kept next to them.
        .executableTarget(
            name: "TokenStoreProbe", dependencies: ["AuthToken", "Persistence", "TokenRefresh"],
            path: "Tests/Probes/TokenStoreProbe"
        ),
        .target(
            name: "NetworkRetry",
            dependencies: [
                "AuthToken",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TokenRefresh",
            dependencies: [
                // PersistenceKeychain compiles to nothing off Apple platforms; the factories' default store uses it.
                "AuthToken", "Persistence", "PersistenceKeychain", "NetworkRetry",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            // User-facing messages in English and Japanese (seed 004), read at run time on every platform.
            resources: [.process("Messages/Resources")]
        ),
        // Backends verify incoming JWS tokens against a JWKS: Foundation, swift-crypto, swift-log and the swift-metrics
        // API only (no NIO).
        .target(
            name: "TokenVerification",
            dependencies: [
                "AuthToken",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ]
        ),
        .target(
            name: "TokenKit",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The mock kit for an app's own tests. No swift-log: an app that bootstraps its own logging backend
        // can use it.
        .target(
            name: "TokenKitTesting",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The `.logLeakCheck()` Swift Testing trait and its machinery: the whole test run logs at trace level
        // into a capture that is searched for the secrets the run used (those crossing the mock kit included).
        .target(
            name: "TokenKitLogCheck",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenKitTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "AuthTokenTests",
            dependencies: ["AuthToken", "TokenKitLogCheck"],
            resources: [.copy("Vectors")]
        ),
        .testTarget(
            name: "PersistenceTests",
            dependencies: ["AuthToken", "Persistence", "TokenRefresh", "TokenKitTesting", "TokenKitLogCheck"]
        ),
        .testTarget(
            name: "NetworkRetryTests",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "TokenRefreshTests",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "TokenKitTestingTests",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenVerificationTests",
            dependencies: [
                "AuthToken", "TokenVerification", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        // The unification analysis's call sites, compiled as the apps wrote them: through `import TokenKit`, and
        // without `ExistentialAny` (the analysis writes `AuthTokenPersistenceProtocol`, not `any ...`).
        .testTarget(
            name: "FitIQCoreTests",
            dependencies: [
                "TokenKit", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: appCallSiteSettings
        ),
        // Every ```swift block of README.md and the DocC articles, generated by .ci/doc-samples (CI checks that the
        // files are in sync). Compiled as a user's file would be: Swift 6, MemberImportVisibility, so a sample's own
        // imports must be enough.
        .testTarget(
            name: "DocSampleTests",
            dependencies: [
                "TokenKit", "TokenVerification", "TokenKitTesting", "TokenKitLogCheck", "AuthToken", "Persistence",
                "NetworkRetry", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // What an attacker tried, one file per area, through the public API only: a token sent to the wrong user or
        // host, a session that will not end, secrets in redirects and dumps, the verifier's defaults.
        .testTarget(
            name: "AttackTests",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenVerification", "TokenKit",
                "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Tokens minted by PyJWT and jwcrypto (Interop/jose, run by .ci/jose-interop); skipped without
        // TOKENKIT_JOSE_FIXTURES.
        .testTarget(
            name: "JOSEIssuerTests",
            dependencies: [
                "TokenVerification", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // Against the django-oauth-toolkit server of Interop/ (run by .ci/interop); skipped without
        // TOKENKIT_INTEROP_URL.
        .testTarget(
            name: "InteropTests",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitTesting", "TokenKitLogCheck",
                "TokenVerification",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)

// Every target gets `strictSettings` unless it says otherwise (FitIQCoreTests compiles app call sites as written).
for target in package.targets where target.swiftSettings == nil {
    target.swiftSettings = strictSettings
}

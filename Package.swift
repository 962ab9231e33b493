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
        .library(name: "TokenKitTestingTraits", targets: ["TokenKitTestingTraits"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        // Foundation only: a consumer who just parses tokens builds nothing else.
        .target(name: "AuthToken", swiftSettings: strictSettings),
        .target(
            name: "Persistence",
            dependencies: [
                "AuthToken",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "PersistenceKeychain", dependencies: ["AuthToken", "Persistence"], swiftSettings: strictSettings),
        // A child process for the Persistence crash and lock tests (not a product).
        .executableTarget(
            name: "TokenStoreProbe", dependencies: ["AuthToken", "Persistence", "TokenRefresh"],
            swiftSettings: strictSettings),
        .target(
            name: "NetworkRetry",
            dependencies: [
                "AuthToken",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TokenRefresh",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // Backends verify incoming JWS tokens against a JWKS: Foundation, swift-crypto and swift-log only (no NIO).
        .target(
            name: "TokenVerification",
            dependencies: [
                "AuthToken",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TokenKit",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TokenKitTesting",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        // The `.logLeakCheck()` Swift Testing trait: the whole test run logs at trace level into a capture
        // that is searched for secrets.
        .target(
            name: "TokenKitTestingTraits",
            dependencies: ["TokenKitTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AuthTokenTests",
            dependencies: ["AuthToken", "TokenKitTesting", "TokenKitTestingTraits"],
            resources: [.copy("Vectors")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PersistenceTests",
            dependencies: ["AuthToken", "Persistence", "TokenRefresh", "TokenKitTesting", "TokenKitTestingTraits"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "NetworkRetryTests",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenKitTesting", "TokenKitTestingTraits",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenRefreshTests",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitTesting", "TokenKitTestingTraits",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenKitTestingTests",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenKitTesting", "TokenKitTestingTraits",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenVerificationTests",
            dependencies: [
                "AuthToken", "TokenVerification", "TokenKitTesting", "TokenKitTestingTraits",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // The unification analysis's call sites, compiled as the apps wrote them: through `import TokenKit`, and
        // without `ExistentialAny` (the analysis writes `AuthTokenPersistenceProtocol`, not `any ...`).
        .testTarget(
            name: "FitIQCoreTests",
            dependencies: [
                "TokenKit", "TokenKitTesting", "TokenKitTestingTraits",
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
                "TokenKit", "TokenVerification", "TokenKitTesting", "TokenKitTestingTraits", "AuthToken", "Persistence",
                "NetworkRetry", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Tokens minted by PyJWT and jwcrypto (Interop/jose, run by .ci/jose-interop); skipped without
        // TOKENKIT_JOSE_FIXTURES.
        .testTarget(
            name: "JOSEIssuerTests",
            dependencies: [
                "TokenVerification", "TokenKitTesting", "TokenKitTestingTraits",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // Against the django-oauth-toolkit server of Interop/ (run by .ci/interop); skipped without
        // TOKENKIT_INTEROP_URL.
        .testTarget(
            name: "InteropTests",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitTesting", "TokenKitTestingTraits",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

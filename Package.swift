// swift-tools-version: 6.2
import PackageDescription

/// Settings every TokenKit target shares: existential `any`, member import visibility, internal imports by default.
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

/// The package trait each server adapter's dependencies wait for.
let ahc = TargetDependencyCondition.when(traits: ["AsyncHTTPClientTransport"])
let hummingbird = TargetDependencyCondition.when(traits: ["HummingbirdMiddleware"])
let postgres = TargetDependencyCondition.when(traits: ["PostgresStore"])
let openAPI = TargetDependencyCondition.when(traits: ["OpenAPIMiddleware"])
/// Vapor 4 is its own trait, outside `ServerAdapters`, so the other adapters' builds never compile Vapor.
let vapor = TargetDependencyCondition.when(traits: ["VaporMiddleware"])
let lifecycle = TargetDependencyCondition.when(traits: ["LifecycleServices"])
let tracing = TargetDependencyCondition.when(traits: ["DistributedTracing"])

/// The default traits: none, unless TOKENKIT_DEFAULT_TRAITS names some (CI's one debug tree; see `traits`).
let ciDefaultTraits = Set(
    (Context.environment["TOKENKIT_DEFAULT_TRAITS"] ?? "").split(separator: ",").map { String($0) }
)

let package = Package(
    name: "TokenKit",
    // What `Clock` and `Duration` need. Locks are AuthToken's LockedValue (OSAllocatedUnfairLock on Apple
    // platforms), not Synchronization.Mutex (macOS 15, iOS 18); AuthSessionModel (@Observable) is marked
    // `@available(macOS 14, iOS 17, ...)`.
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    products: [
        // The core: the token, its storage, the network, the session and verification; `TokenKit` is the umbrella an
        // app imports.
        .library(name: "TokenKit", targets: ["TokenKit"]),
        .library(name: "AuthToken", targets: ["AuthToken"]),
        .library(name: "Persistence", targets: ["Persistence"]),
        .library(name: "PersistenceKeychain", targets: ["PersistenceKeychain"]),
        .library(name: "NetworkRetry", targets: ["NetworkRetry"]),
        .library(name: "TokenRefresh", targets: ["TokenRefresh"]),
        .library(name: "TokenVerification", targets: ["TokenVerification"]),
        // App add-ons, in the README's order. Browser sign-in (authorization code + PKCE, OpenID Connect), logout at
        // the provider, the device grant. What an app's screens show (user messages in English and Japanese, sign-up
        // field rules, the `@Observable` session model). One session shared by an app and its extensions, and
        // lifecycle hooks. The FitIQ and Lume apps' API shapes and the migration of their stored sessions. The
        // `TokenKit` umbrella re-exports the screens and the FitIQ and Lume shapes.
        .library(name: "TokenKitSignIn", targets: ["TokenKitSignIn"]),
        .library(name: "TokenKitScreens", targets: ["TokenKitScreens"]),
        .library(name: "TokenKitAppLifecycle", targets: ["TokenKitAppLifecycle"]),
        .library(name: "TokenKitCompatibility", targets: ["TokenKitCompatibility"]),
        // Server adapters. Each compiles to an empty module unless its package trait is on, and the packages it needs
        // are resolved only when it is: an app that adds TokenKit alone never clones or builds NIO.
        .library(name: "TokenKitAsyncHTTPClient", targets: ["TokenKitAsyncHTTPClient"]),
        .library(name: "TokenKitHummingbird", targets: ["TokenKitHummingbird"]),
        .library(name: "TokenKitVapor", targets: ["TokenKitVapor"]),
        .library(name: "TokenKitServiceLifecycle", targets: ["TokenKitServiceLifecycle"]),
        .library(name: "TokenKitPostgres", targets: ["TokenKitPostgres"]),
        .library(name: "TokenKitOpenAPI", targets: ["TokenKitOpenAPI"]),
        // Test kits, for an app's own tests: doubles (transport, clock, token server, a vendor auth SDK's session),
        // a Keychain simulator for tests on any platform, and the log leak check.
        .library(name: "TokenKitTesting", targets: ["TokenKitTesting"]),
        .library(name: "TokenKitKeychainTesting", targets: ["TokenKitKeychainTesting"]),
        .library(name: "TokenKitLogCheck", targets: ["TokenKitLogCheck"]),
    ],
    traits: [
        .trait(
            name: "AsyncHTTPClientTransport",
            description: "TokenKitAsyncHTTPClient: the HTTPTransport and JWKS fetch over AsyncHTTPClient (SwiftNIO)."),
        .trait(
            name: "HummingbirdMiddleware",
            description: "TokenKitHummingbird: Bearer JWT verification as Hummingbird 2 middleware."),
        .trait(
            name: "PostgresStore",
            description: "TokenKitPostgres: a TokenStore on PostgreSQL (postgres-nio) for replicas sharing sessions."),
        .trait(
            name: "OpenAPIMiddleware",
            description: "TokenKitOpenAPI: a swift-openapi-runtime middleware that attaches and refreshes tokens."),
        .trait(
            name: "ServerAdapters",
            description: "Every server adapter above.",
            enabledTraits: ["AsyncHTTPClientTransport", "HummingbirdMiddleware", "PostgresStore", "OpenAPIMiddleware"]),
        .trait(
            name: "VaporMiddleware",
            description: "TokenKitVapor: Bearer JWT verification as Vapor 4 middleware and authenticator (req.auth)."),
        .trait(
            name: "LifecycleServices",
            description:
                "TokenKitServiceLifecycle: the JWKS refresher and the session registry's sweeper as swift-service-lifecycle Services."
        ),
        .trait(
            name: "DistributedTracing",
            description:
                "TokenVerification records spans (verification, JWKS refresh linked to its waiters) through swift-distributed-tracing."
        ),
        // No trait is on by default. CI names every server trait in TOKENKIT_DEFAULT_TRAITS (comma-separated) so
        // that one debug tree serves the README's `swift test`, the adapters' suites, the docs and the Examples
        // package (which names the same traits): the core compiles once there, not once per trait set.
        .default(enabledTraits: ciDefaultTraits),
    ],
    dependencies: [
        // `FoundationURL`: `HTTPRequest(url:)`, which keeps a URL's path and query as written (the umbrella offers it).
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0", traits: ["FoundationURL"]),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        // The metrics API only (no backend, no NIO): a no-op until the app bootstraps one.
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        // `swift package generate-documentation`. No target uses it, so a package that depends on TokenKit never
        // resolves it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The server adapters' packages: resolved only when a trait that uses them is on.
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        // Hummingbird's default traits, as a backend's own manifest names it: one set of traits in the graph.
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // hummingbird-auth's `AuthenticatorMiddleware` conventions (with `HummingbirdMiddleware`) and Vapor 4 (with
        // `VaporMiddleware`).
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/vapor.git", from: "4.122.3"),
        // `Service` and `ServiceGroup` (with `LifecycleServices`; Hummingbird already depends on it).
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        // Spans through the bootstrapped tracer (with `DistributedTracing`).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
    ],
    targets: [
        // Foundation only: a consumer who just parses tokens builds nothing else. Its resource bundle holds the
        // translations of its error messages (English stays in the code).
        .target(name: "AuthToken", resources: [.process("Resources")]),
        .target(
            name: "Persistence",
            dependencies: [
                "AuthToken",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.process("Resources")]
        ),
        .target(name: "PersistenceKeychain", dependencies: ["AuthToken", "Persistence"]),
        // A child process for the Persistence crash and lock tests (not a product), kept next to them.
        .executableTarget(
            name: "TokenStoreProbe",
            dependencies: [
                "AuthToken", "NetworkRetry", "Persistence", "TokenKitTesting", "TokenRefresh", "TokenKitPostgres",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
            ],
            path: "Tests/Probes/TokenStoreProbe"
        ),
        .target(
            name: "NetworkRetry",
            dependencies: [
                "AuthToken",
                // DPoP proofs (ES256 with a P-256 key).
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.process("Resources")]
        ),
        .target(
            name: "TokenRefresh",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
            ],
            // User-facing messages in English and Japanese, read at run time on every platform.
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
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: tracing),
            ],
            resources: [.process("Resources")]
        ),
        .target(
            name: "TokenKit",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitCompatibility", "TokenKitScreens",
                // The factories' default store: the Keychain on Apple platforms (compiles to nothing elsewhere).
                "PersistenceKeychain",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Browser and device sign-in with OpenID Connect: the core modules' public API plus TokenVerification for
        // the ID token. Apple's ASWebAuthenticationSession conformer is inside `#if canImport(AuthenticationServices)`.
        .target(
            name: "TokenKitSignIn",
            dependencies: [
                "AuthToken", "NetworkRetry", "Persistence", "TokenRefresh", "TokenVerification",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            // Its error messages in Japanese (English stays in the code).
            resources: [.process("Resources")]
        ),
        // An OpenID provider in memory for the sign-in tests and attack tests (not a product).
        .target(
            name: "SignInTestSupport",
            dependencies: [
                "TokenKitSignIn", "NetworkRetry", "Persistence", "TokenRefresh", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/SignInTestSupport"
        ),
        .testTarget(
            name: "TokenKitSignInTests",
            dependencies: [
                "TokenKitSignIn", "SignInTestSupport", "AuthToken", "NetworkRetry", "Persistence", "TokenRefresh",
                "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The bridge to the FitIQ and Lume code bases: their persistence and network-client protocols, `APIError`,
        // `executeWithAutoRetry(request:tokenRefreshClient:authTokenPersistence:)`, and the one-time migration of
        // their stored sessions (the Keychain source on Apple platforms only).
        .target(
            name: "TokenKitCompatibility",
            dependencies: [
                "AuthToken", "Persistence", "PersistenceKeychain", "NetworkRetry", "TokenRefresh",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What an app's screens show, on top of the core: `UserMessage` (its English and Japanese texts are its
        // resources), `CredentialRules` and `AuthSessionModel`.
        .target(
            name: "TokenKitScreens",
            dependencies: ["AuthToken", "NetworkRetry", "TokenRefresh"],
            resources: [.process("Resources")]
        ),
        // The mock kit for an app's own tests. No swift-log: an app that bootstraps its own logging backend
        // can use it.
        .target(
            name: "TokenKitTesting",
            dependencies: [
                "AuthToken", "NetworkRetry", "Persistence", "TokenRefresh",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            resources: [.process("Resources")]
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
        // Helpers only TokenKit's own tests use (a loopback HTTP server, the probe launcher, scratch directories, a
        // token issuer and a DPoP client for the server adapters): a target, never a product.
        // TokenKitSignIn: the loopback listener's socket code, shared with the test servers (package access).
        .target(
            name: "TokenKitTestSupport",
            dependencies: [
                "Persistence", "TokenKitTesting", "TokenKitSignIn", "NetworkRetry", "AuthToken", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/TokenKitTestSupport"),
        // The doors: one factory per kind of app, through `import TokenKit` as an app writes it.
        .testTarget(
            name: "TokenKitTests",
            dependencies: [
                "TokenKit", "TokenVerification", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "AuthTokenTests",
            dependencies: ["TokenKitTestSupport", "TokenKitCompatibility", "AuthToken", "TokenKitLogCheck"],
            resources: [.copy("Vectors")]
        ),
        .testTarget(
            name: "PersistenceTests",
            dependencies: [
                "TokenKitTestSupport",
                "AuthToken", "Persistence", "TokenRefresh", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "NetworkRetryTests",
            dependencies: [
                "TokenKitTestSupport",
                "AuthToken", "NetworkRetry", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "TokenRefreshTests",
            dependencies: [
                "TokenKitTestSupport", "TokenKitCompatibility",
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitTesting", "TokenKitLogCheck",
                "TokenVerification", "TokenKitScreens",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
            ]
        ),
        .testTarget(
            name: "TokenKitScreensTests",
            dependencies: [
                "NetworkRetry", "TokenRefresh", "TokenKitScreens", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "TokenKitCompatibilityTests",
            dependencies: [
                "TokenKitTestSupport", "AuthToken", "Persistence", "TokenKitCompatibility", "TokenKitTesting",
                "TokenKitLogCheck",
            ]
        ),
        .testTarget(
            name: "TokenKitAppLifecycleTests",
            dependencies: [
                "TokenKitTestSupport", "AuthToken", "Persistence", "PersistenceKeychain", "TokenRefresh",
                "TokenKitAppLifecycle", "TokenKitKeychainTesting", "TokenKitTesting", "TokenKitLogCheck",
                "NetworkRetry",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "TokenKitTestingTests",
            dependencies: ["AuthToken", "TokenKitTesting", "TokenKitLogCheck"]
        ),
        .testTarget(
            name: "TokenKitLogCheckTests",
            dependencies: [
                "AuthToken", "NetworkRetry", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenVerificationTests",
            dependencies: [
                "TokenKitTestSupport",
                "AuthToken", "TokenVerification", "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "MetricsTestKit", package: "swift-metrics"),
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing", condition: tracing),
                .product(name: "Tracing", package: "swift-distributed-tracing", condition: tracing),
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
                "NetworkRetry", "TokenRefresh", "TokenKitCompatibility",
                "PersistenceKeychain", "TokenKitAppLifecycle", "TokenKitKeychainTesting",
                "TokenKitSignIn", "TokenKitScreens",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // What an attacker tried, one file per area, through the public API only: a token sent to the wrong user or
        // host, a session that will not end, secrets in redirects and dumps, the verifier's defaults.
        .testTarget(
            name: "AttackTests",
            dependencies: [
                "TokenKitTestSupport",
                "TokenKitCompatibility",
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenVerification", "TokenKit",
                "TokenKitSignIn", "SignInTestSupport",
                "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The server adapters (see `traits`): every file is inside `#if` of its trait.
        .target(
            name: "TokenKitAsyncHTTPClient",
            dependencies: [
                "NetworkRetry", "TokenVerification",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: ahc),
                .product(name: "NIOCore", package: "swift-nio", condition: ahc),
                .product(name: "NIOHTTP1", package: "swift-nio", condition: ahc),
                .product(name: "NIOPosix", package: "swift-nio", condition: ahc),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TokenKitOpenAPI",
            dependencies: [
                "NetworkRetry", "AuthToken",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: openAPI),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "TokenKitPostgres",
            dependencies: [
                "Persistence", "AuthToken", "TokenVerification",
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "NIOCore", package: "swift-nio", condition: postgres),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TokenKitHummingbird",
            dependencies: [
                "TokenVerification",
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth", condition: hummingbird),
                .product(name: "NIOCore", package: "swift-nio", condition: hummingbird),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Their tests, also inside `#if`: a plain `swift test` compiles them empty, and .ci/postgres runs them with
        // `--traits ServerAdapters` against a real PostgreSQL.
        .testTarget(
            name: "TokenKitKeychainTestingTests",
            dependencies: ["TokenKitKeychainTesting", "PersistenceKeychain", "TokenKitLogCheck"]
        ),
        .testTarget(
            name: "TokenKitAsyncHTTPClientTests",
            dependencies: [
                "TokenKitTestSupport", "TokenKitAsyncHTTPClient", "NetworkRetry", "TokenVerification", "AuthToken",
                "TokenKitTesting", "TokenKitLogCheck",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: ahc),
                .product(name: "NIOCore", package: "swift-nio", condition: ahc),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenKitOpenAPITests",
            dependencies: [
                "TokenKitTestSupport", "TokenKitOpenAPI", "NetworkRetry", "AuthToken", "TokenKitLogCheck",
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: openAPI),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .testTarget(
            name: "TokenKitPostgresTests",
            dependencies: [
                "TokenKitPostgres", "Persistence", "AuthToken", "NetworkRetry", "TokenRefresh", "TokenKitTesting",
                "TokenKitLogCheck", "TokenVerification",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "NIOCore", package: "swift-nio", condition: postgres),
                .product(name: "NIOPosix", package: "swift-nio", condition: postgres),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenKitHummingbirdTests",
            dependencies: [
                "TokenKitHummingbird", "TokenVerification", "TokenKitTesting", "TokenKitLogCheck",
                "TokenKitTestSupport",
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdTesting", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth", condition: hummingbird),
                .product(name: "NIOCore", package: "swift-nio", condition: hummingbird),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // Vapor 4 (trait `VaporMiddleware`): every file is inside `#if VaporMiddleware`.
        .target(
            name: "TokenKitVapor",
            dependencies: [
                "TokenVerification",
                .product(name: "Vapor", package: "vapor", condition: vapor),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "TokenKitVaporTests",
            dependencies: [
                "TokenKitVapor", "TokenVerification", "TokenKitTesting", "TokenKitLogCheck",
                "TokenKitTestSupport",
                .product(name: "Vapor", package: "vapor", condition: vapor),
                .product(name: "VaporTesting", package: "vapor", condition: vapor),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // swift-service-lifecycle (trait `LifecycleServices`): every file is inside `#if LifecycleServices`.
        .target(
            name: "TokenKitServiceLifecycle",
            dependencies: [
                "TokenVerification", "TokenRefresh",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: lifecycle),
            ]
        ),
        .testTarget(
            name: "TokenKitServiceLifecycleTests",
            dependencies: [
                "TokenKitServiceLifecycle", "TokenVerification", "TokenRefresh", "Persistence", "TokenKitTesting",
                "TokenKitLogCheck",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: lifecycle),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The samples of Integrations/README.md and the adapters' DocC, compiled as printed (.ci/doc-samples).
        .testTarget(
            name: "IntegrationDocSampleTests",
            dependencies: [
                "TokenKitAsyncHTTPClient", "TokenKitOpenAPI", "TokenKitHummingbird", "TokenKitPostgres", "TokenKit",
                "TokenVerification",
                .product(name: "AsyncHTTPClient", package: "async-http-client", condition: ahc),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: openAPI),
                .product(name: "Hummingbird", package: "hummingbird", condition: hummingbird),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth", condition: hummingbird),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: postgres),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // The Apple side. PersistenceKeychain's only Apple-only file is SystemKeychain.swift (the SecItem calls);
        // everything else, and these targets, build and run on Linux against KeychainSimulator.
        .target(
            name: "TokenKitAppLifecycle",
            dependencies: ["AuthToken", "Persistence", "TokenRefresh"]
        ),
        .target(
            name: "TokenKitKeychainTesting",
            dependencies: ["PersistenceKeychain", "TokenKitAppLifecycle"]
        ),
        // A child process for the shared-session tests (not a product): an app or extension over the simulator.
        .executableTarget(
            name: "KeychainSessionProbe",
            dependencies: [
                "AuthToken", "Persistence", "PersistenceKeychain", "NetworkRetry", "TokenRefresh",
                "TokenKitAppLifecycle", "TokenKitKeychainTesting",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            path: "Tests/Probes/KeychainSessionProbe"
        ),
        .testTarget(
            name: "PersistenceKeychainTests",
            dependencies: [
                "AuthToken", "Persistence", "PersistenceKeychain", "NetworkRetry", "TokenRefresh",
                "TokenKitCompatibility",
                "TokenKitAppLifecycle", "TokenKitKeychainTesting", "TokenKitTesting", "TokenKitTestSupport",
                "TokenKitLogCheck",
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Tokens minted by PyJWT and jwcrypto (Interop/jose, run by .ci/jose-interop); skipped without
        // TOKENKIT_JOSE_FIXTURES.
        .testTarget(
            name: "JOSEIssuerTests",
            dependencies: ["TokenVerification", "TokenKitLogCheck"]
        ),
        // Against the django-oauth-toolkit server of Interop/ (run by .ci/interop); skipped without
        // TOKENKIT_INTEROP_URL.
        .testTarget(
            name: "InteropTests",
            dependencies: [
                "AuthToken", "Persistence", "NetworkRetry", "TokenRefresh", "TokenKitTesting", "TokenKitLogCheck",
                "TokenVerification",
                "TokenKitSignIn",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)

// CI's thread-sanitizer tree runs some test targets only: TOKENKIT_TEST_TARGETS (comma-separated) names them, and the
// other test targets are left out of the package, so that tree never compiles them. Every library and executable
// target stays. Unset (a user's `swift test`, every other CI tree), every test target is in the package.
if let testTargets = Context.environment["TOKENKIT_TEST_TARGETS"] {
    let kept = Set(testTargets.split(separator: ",").map { String($0) })
    package.targets.removeAll { $0.type == .test && !kept.contains($0.name) }
}

// One settings loop. Every target gets `strictSettings` unless it says otherwise (FitIQCoreTests compiles app call
// sites as written). CI sets TOKENKIT_WARNINGS_AS_ERRORS=1 for every build of this package, so its one build tree
// also proves that the library targets compile without a warning (not the test targets: Swift Testing's macro
// expansions warn on Swift 6.3.1). A package that depends on TokenKit never sees the switch.
let warningsAsErrors = Context.environment["TOKENKIT_WARNINGS_AS_ERRORS"] == "1"
for target in package.targets {
    var settings = target.swiftSettings ?? strictSettings
    if warningsAsErrors && target.type != .test {
        settings.insert(.treatAllWarnings(as: .error), at: 0)
    }
    target.swiftSettings = settings
}

// swift-tools-version: 6.2
import PackageDescription

// Adapters with heavy dependencies live in their own package, so TokenKit's own graph never pulls NIO or the
// OpenAPI runtime. Depend on the product you need: `TokenKitAsyncHTTPClient`, `TokenKitOpenAPI` or
// `TokenKitPostgres`.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .warning),
]

let package = Package(
    name: "TokenKitIntegrations",
    platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
    products: [
        .library(name: "TokenKitAsyncHTTPClient", targets: ["TokenKitAsyncHTTPClient"]),
        .library(name: "TokenKitOpenAPI", targets: ["TokenKitOpenAPI"]),
        .library(name: "TokenKitHummingbird", targets: ["TokenKitHummingbird"]),
        .library(name: "TokenKitPostgres", targets: ["TokenKitPostgres"]),
    ],
    dependencies: [
        .package(name: "TokenKit", path: ".."),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-openapi-runtime.git", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.6.0"),
        // Only the FullFoundation trait, as in Examples (which depends on this package): with the default traits
        // here and not there, SwiftPM intermittently failed to find swift-configuration's `Configuration` product.
        .package(
            url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: ["FullFoundation"]),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(
            name: "TokenKitAsyncHTTPClient",
            dependencies: [
                .product(name: "NetworkRetry", package: "TokenKit"),
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TokenKitOpenAPI",
            dependencies: [
                .product(name: "NetworkRetry", package: "TokenKit"),
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
        .target(
            name: "TokenKitPostgres",
            dependencies: [
                .product(name: "Persistence", package: "TokenKit"),
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenKitPostgresTests",
            dependencies: [
                "TokenKitPostgres",
                .product(name: "Persistence", package: "TokenKit"),
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "TokenRefresh", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenKitIntegrationsTests",
            dependencies: [
                "TokenKitAsyncHTTPClient", "TokenKitOpenAPI",
                .product(name: "NetworkRetry", package: "TokenKit"),
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
        // Bearer JWT verification for Hummingbird 2 servers: TokenVerification behind a RouterMiddleware.
        .target(
            name: "TokenKitHummingbird",
            dependencies: [
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "TokenKitHummingbirdTests",
            dependencies: [
                "TokenKitHummingbird",
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitLogCheck", package: "TokenKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
        // Every swift block of README.md and the DocC articles, compiled as printed (generated by .ci/doc-samples).
        .testTarget(
            name: "DocSampleTests",
            dependencies: [
                "TokenKitAsyncHTTPClient", "TokenKitOpenAPI", "TokenKitHummingbird", "TokenKitPostgres",
                .product(name: "TokenKit", package: "TokenKit"),
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)

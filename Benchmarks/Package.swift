// swift-tools-version: 6.2
import PackageDescription

// Benchmarks live in their own package so the library's graph never sees jwt-kit or the harness.
// Run them release-built: `swift run -c release --package-path Benchmarks <Name>`.
let package = Package(
    name: "TokenKitBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        // The library by path, with the two server adapters' traits the benchmarks use on: TokenKitAsyncHTTPClient
        // (TransportBenchmarks) and TokenKitPostgres (PostgresRefreshBenchmarks). Not `ServerAdapters`, whose
        // Hummingbird and OpenAPI adapters no benchmark imports: their packages are then neither cloned nor loaded.
        .package(name: "TokenKit", path: "..", traits: ["AsyncHTTPClientTransport", "PostgresStore"]),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.0"),
        // PostgresRefreshBenchmarks only: PostgresTokenStore's pool.
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
    ],
    targets: [
        .target(name: "BenchmarkSupport"),
        .executableTarget(
            name: "AuthTokenBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ]
        ),
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: ["BenchmarkSupport", .product(name: "Persistence", package: "TokenKit")]
        ),
        .executableTarget(
            name: "RetryBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "NetworkRetry", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // The FitIQCore surface (executeWithAutoRetry over NetworkClientProtocol) against the core calls it wraps.
        .executableTarget(
            name: "FitIQCoreBenchmarks",
            dependencies: ["BenchmarkSupport", .product(name: "TokenKit", package: "TokenKit")]
        ),
        .executableTarget(
            name: "RefreshBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "TokenRefresh", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
            ]
        ),
        // AuthToken's LockedValue.swift (a symlink), compiled as a module of this package so its `package` API is
        // reachable, and called across a module boundary as TokenRefresh calls it.
        .target(name: "LockedValueUnderTest"),
        // The lock that replaced Synchronization.Mutex against a Mutex read, in the same run.
        .executableTarget(
            name: "LockBenchmarks",
            dependencies: [
                "BenchmarkSupport", "LockedValueUnderTest", .product(name: "AuthToken", package: "TokenKit"),
            ]
        ),
        // The system OpenSSL's libcrypto (libssl-dev), the baseline VerifyBenchmarks measures swift-crypto against.
        .executableTarget(
            name: "RegistryBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "TokenRefresh", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
            ]
        ),
        .systemLibrary(name: "COpenSSLCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .executableTarget(
            name: "VerifyBenchmarks",
            dependencies: [
                "BenchmarkSupport", "COpenSSLCrypto",
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "TransportBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "NetworkRetry", package: "TokenKit"),
                .product(name: "TokenKitAsyncHTTPClient", package: "TokenKit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // DPoP on the resource server; its PostgreSQL figures only through `.ci/postgres --run`.
        .executableTarget(
            name: "DPoPBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "TokenVerification", package: "TokenKit"),
                .product(name: "TokenKitPostgres", package: "TokenKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // A DPoP proof against a bare P-256 sign (synchronous, so callgrind can run it: `Benchmarks/callgrind dpop`).
        .executableTarget(
            name: "DPoPProofBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "NetworkRetry", package: "TokenKit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        // Run through `.ci/postgres --run` (a throwaway PostgreSQL on loopback); without one it says so and exits 0.
        .executableTarget(
            name: "PostgresRefreshBenchmarks",
            dependencies: [
                "BenchmarkSupport",
                .product(name: "AuthToken", package: "TokenKit"),
                .product(name: "Persistence", package: "TokenKit"),
                .product(name: "TokenRefresh", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
                .product(name: "TokenKitPostgres", package: "TokenKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
    ]
)

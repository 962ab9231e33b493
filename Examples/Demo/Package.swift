// swift-tools-version: 6.2
import PackageDescription

/// The same strictness as the TokenKit package.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatWarning("ExplicitSendable", as: .warning),
]

// The README's first command: a client demo against a server in the same process, both on Foundation alone. TokenKit
// with no trait (whatever TOKENKIT_DEFAULT_TRAITS says), so this package resolves no SwiftNIO and compiles only what an
// app that adds TokenKit compiles, plus TokenKitTesting's token server.
let package = Package(
    name: "TokenKitDemo",
    platforms: [.macOS(.v13), .iOS(.v16)],
    products: [
        .executable(name: "tokenkit-demo", targets: ["tokenkit-demo"])
    ],
    dependencies: [
        .package(name: "TokenKit", path: "../..", traits: [])
    ],
    targets: [
        // A small HTTP/1.1 server on 127.0.0.1 (POSIX sockets, one thread per connection) in front of
        // TokenKitTesting's `SimulatedTokenServer`, with a protected API beside it.
        .target(
            name: "DemoServer",
            dependencies: [
                .product(name: "TokenKit", package: "TokenKit"),
                .product(name: "TokenKitTesting", package: "TokenKit"),
            ],
            swiftSettings: strictSettings
        ),
        // The run: sign in, concurrent requests across expiries, a restart from the stored session.
        .target(
            name: "QuickDemo",
            dependencies: ["DemoServer", .product(name: "TokenKit", package: "TokenKit")],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "tokenkit-demo", dependencies: ["QuickDemo", "DemoServer"], swiftSettings: strictSettings),
        .testTarget(
            name: "QuickDemoTests",
            dependencies: ["QuickDemo", "DemoServer", .product(name: "TokenKit", package: "TokenKit")],
            swiftSettings: strictSettings
        ),
    ]
)

// swift-tools-version: 6.2
// A consumer that only parses tokens. CI builds it and checks that nothing but AuthToken was compiled.
import PackageDescription

let package = Package(
    name: "ConsumerAuthToken",
    dependencies: [.package(name: "TokenKit", path: "../..")],
    targets: [.executableTarget(name: "Consumer", dependencies: [.product(name: "AuthToken", package: "TokenKit")])]
)

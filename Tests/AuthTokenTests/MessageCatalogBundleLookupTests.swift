import AuthToken
import Foundation
import Testing
import TokenKitLogCheck

/// The resource-bundle lookup for translated messages finds each platform's layout, checked here with the layouts
/// laid out on disk (Apple's included), and answers `nil` (English stays) instead of stopping the process.
@Suite(.logLeakCheck()) struct MessageCatalogBundleLookupTests {
    struct Layout: Sendable, CustomStringConvertible {
        let name: String
        let relativeDirectory: String
        var description: String { name }
    }

    static let layouts = [
        Layout(name: "Linux (.resources beside the executable)", relativeDirectory: "TokenKit_AuthToken.resources"),
        Layout(name: "iOS, tvOS, watchOS, visionOS (flat .bundle)", relativeDirectory: "TokenKit_AuthToken.bundle"),
        Layout(
            name: "macOS (.bundle/Contents/Resources)",
            relativeDirectory: "TokenKit_AuthToken.bundle/Contents/Resources"),
    ]

    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("tokenkit-bundles-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test(arguments: layouts) func eachPlatformsBundleLayoutIsFound(_ layout: Layout) throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let directory = root.appendingPathComponent(layout.relativeDirectory, isDirectory: true)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(#"{"AuthTokenError.expired":"x"}"#.utf8).write(to: directory.appendingPathComponent("ja.json"))
        let elsewhere = root.appendingPathComponent("Frameworks", isDirectory: true)
        let found = MessageCatalog.resourceDirectory(
            bundle: "TokenKit_AuthToken", containing: "ja.json", in: [elsewhere, root],
            fileExists: { FileManager.default.fileExists(atPath: $0.path) })
        #expect(found?.standardizedFileURL.path == directory.standardizedFileURL.path)
    }

    @Test func aMissingBundleIsNilNotACrash() throws {
        let root = try Self.scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        let found = MessageCatalog.resourceDirectory(
            bundle: "TokenKit_AuthToken", containing: "ja.json", in: [root],
            fileExists: { FileManager.default.fileExists(atPath: $0.path) })
        #expect(found == nil)
    }

    @Test func thisTestRunsOwnBundleIsFoundThroughTheBundles() {
        #expect(MessageCatalog.resourceDirectory(bundle: "TokenKit_AuthToken", containing: "ja.json") != nil)
    }
}

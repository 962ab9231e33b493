import Foundation
import Logging
import NetworkRetry
import Testing
import TokenKitLogCheck

/// The log check covers the whole run only if every suite carries the trait: a suite without it would run
/// its tests with no scope and no per-test search (the search at exit still covers its lines).
@Suite(.logLeakCheck()) struct EverySuiteChecksItsLogsTests {
    /// The root package's `Tests` directory.
    private static let testsDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent()

    private static func swiftFiles() -> [URL] {
        let files = FileManager.default.enumerator(at: testsDirectory, includingPropertiesForKeys: nil)
        return (files?.allObjects as? [URL] ?? []).filter { $0.pathExtension == "swift" }
    }

    /// Each suite attribute that starts a line, from the attribute to the declaration it is attached to.
    static func suiteAttributes(in text: String) -> [String] {
        var attributes: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " }
            if current == nil, trimmed.hasPrefix("@Suite") { current = [] }
            guard current != nil else { continue }
            current?.append(trimmed)
            if trimmed.contains(try! Regex(#"\b(struct|class|enum|actor|extension)\s"#)) {
                attributes.append(current!.joined(separator: " "))
                current = nil
            }
        }
        return attributes
    }

    @Test func everySuiteInTheTestsDirectoryHasTheTrait() throws {
        let files = Self.swiftFiles()
        #expect(files.count >= 30, "found the test sources")
        var suites = 0
        for file in files where file.lastPathComponent != URL(fileURLWithPath: #filePath).lastPathComponent {
            let text = try String(contentsOf: file, encoding: .utf8)
            for attribute in Self.suiteAttributes(in: text) {
                suites += 1
                #expect(attribute.contains(".logLeakCheck()"), "\(file.lastPathComponent): \(attribute)")
            }
            // A test outside a `@Suite` (a free function, or a type with tests but no attribute) would escape
            // the check: a file with tests must declare a suite that carries the trait.
            if text.contains("@Test") {
                #expect(
                    Self.suiteAttributes(in: text).contains { $0.contains(".logLeakCheck()") },
                    "\(file.lastPathComponent) has tests but no suite with the trait")
            }
        }
        #expect(suites >= 35)
    }

    @Test func aStaticLoggerOfTheLibraryLogsIntoTheCapture() {
        // Made on first use, which the trait's installation precedes: so it has the capture's handler, at trace.
        #expect(AuthenticatedClient.defaultLogger.logLevel == .trace)
    }

    @Test func theAttributeReaderFindsMultiLineAttributes() {
        let text = """
            @Suite(
                .serialized,
                .logLeakCheck()
            )
            struct A {}
            @Suite(.enabled(if: true)) struct B {}
            """
        #expect(
            Self.suiteAttributes(in: text).map { $0.contains(".logLeakCheck()") } == [true, false])
    }
}

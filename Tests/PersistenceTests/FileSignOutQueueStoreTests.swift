import Foundation
import Persistence
import Testing
import TokenKitLogCheck

/// The file that keeps a client's unfinished sign-outs: private to the user, replaced whole, one per account.
@Suite(.logLeakCheck()) struct FileSignOutQueueStoreTests {
    static func directory() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("sign-outs-\(UUID().uuidString)")
    }

    @Test func aBlobIsKeptPerAccountReadableByTheUserOnlyAndRemovedWithNil() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileSignOutQueueStore(directory: directory)
        #expect(try await store.loadSignOutQueue(account: "default") == nil)
        try await store.saveSignOutQueue(Data("one".utf8), account: "default")
        try await store.saveSignOutQueue(Data("two".utf8), account: "work/alice@example.com")
        try await store.saveSignOutQueue(Data("three".utf8), account: "default")
        #expect(try await store.loadSignOutQueue(account: "default") == Data("three".utf8))
        #expect(try await store.loadSignOutQueue(account: "work/alice@example.com") == Data("two".utf8))

        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.count == 2, "files: \(files)")
        for file in files {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: directory.appendingPathComponent(file).path)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
        try await store.saveSignOutQueue(nil, account: "default")
        try await store.saveSignOutQueue(nil, account: "default")
        #expect(try await store.loadSignOutQueue(account: "default") == nil)
        #expect(try await store.loadSignOutQueue(account: "work/alice@example.com") == Data("two".utf8))
    }

    @Test func aLongAccountGetsAShortFileName() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = FileSignOutQueueStore(directory: directory)
        let account = String(repeating: "a-very-long-account-name/", count: 40)
        try await store.saveSignOutQueue(Data("kept".utf8), account: account)
        #expect(try await store.loadSignOutQueue(account: account) == Data("kept".utf8))
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: directory.path).first)
        #expect(name.count < 100)
    }
}

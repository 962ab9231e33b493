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

    /// Two stores on one directory (two processes sharing it) changing one account's queue at once, many times: every
    /// change that returned is kept, each made over the one before it. (A change that waited past the lock's timeout,
    /// as on a loaded machine, throws and changes nothing: never lost silently.)
    @Test func changesFromTwoStoresAtOnceAreAllKept() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let stores = [FileSignOutQueueStore(directory: directory), FileSignOutQueueStore(directory: directory)]
        let changes = 60
        let made = await withTaskGroup(of: String?.self) { group in
            for change in 0..<changes {
                group.addTask {
                    let line = "\(change)"
                    let kept = try? await stores[change % 2].updateSignOutQueue(account: "default") { data in
                        (data ?? Data()) + Data((line + "\n").utf8)
                    }
                    return kept == nil ? nil : line
                }
            }
            return await group.reduce(into: Set<String>()) { made, line in line.map { _ = made.insert($0) } }
        }
        let kept = try #require(try await stores[0].loadSignOutQueue(account: "default"))
        let lines = String(decoding: kept, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(!made.isEmpty)
        #expect(Set(lines) == made, "changes kept: \(lines.count) of \(made.count) made (\(changes) tried)")
        #expect(lines.count == made.count)
        let removed = try await stores[1].updateSignOutQueue(account: "default") { _ in nil }
        #expect(removed == nil)
        #expect(try await stores[0].loadSignOutQueue(account: "default") == nil)
    }
}

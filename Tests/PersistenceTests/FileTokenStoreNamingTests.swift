import AuthToken
import Crypto
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Session file names: a keyed hash of the account under a key the store keeps, and the files an earlier version
/// named by a plain SHA-256.
@Suite(.logLeakCheck()) struct FileTokenStoreNamingTests {
    static let account = "ada@example.com"

    /// The hex SHA-256 of `text`: what anyone can compute from a guessed account.
    static func plainHash(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test func aDirectoryListingDoesNotConfirmAGuessedAccount() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(sampleSession(generation: 1), account: Self.account, condition: .always)
        try await store.withExclusiveAccess(account: Self.account) {}

        let guessed = Self.plainHash(Self.account)
        let names = directoryNames(temporary.storeDirectory)
        #expect(names.contains { $0.hasSuffix(".json") } && names.contains { $0.hasSuffix(".lock") })
        for name in names { #expect(!name.contains(guessed), "\(name) is the account's plain SHA-256") }
        #expect(!store.filePath(account: Self.account).contains(guessed))
        // The key: 32 bytes, owner only; another store over the directory finds the same names.
        let key = temporary.storeDirectory.appendingPathComponent("session-naming-key")
        #expect(permissions(key.path) == 0o600)
        #expect(try Data(contentsOf: key).count == 32)
        let reopened = FileTokenStore(directory: temporary.storeDirectory)
        #expect(reopened.filePath(account: Self.account) == store.filePath(account: Self.account))
        #expect(await reopened.load(account: Self.account).session?.generation == 1)
        // Another directory has its own key, so the same account has another name there.
        let other = try TemporaryDirectory()
        defer { other.remove() }
        let elsewhere = FileTokenStore(directory: other.storeDirectory)
        try await elsewhere.save(sampleSession(generation: 1), account: Self.account, condition: .always)
        let here = URL(fileURLWithPath: store.filePath(account: Self.account)).lastPathComponent
        let there = URL(fileURLWithPath: elsewhere.filePath(account: Self.account)).lastPathComponent
        #expect(here != there)
    }

    /// Writes `session` for `account` as an earlier version did: named by the account's plain SHA-256, and when
    /// sealed, bound to that name.
    static func writeEarlierFile(
        _ session: StoredSession, account: String, in directory: URL, key: SymmetricKey?
    ) throws -> String {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        _ = chmod(directory.path, 0o700)
        let name = "session-\(plainHash(account)).json"
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let plain = try encoder.encode(session)
        var envelope = #"{"formatVersion":1,"session":"# + String(decoding: plain, as: UTF8.self) + "}"
        if let key {
            let box = try AES.GCM.seal(
                plain, using: key, authenticating: Data("TokenKit.FileTokenStore.v1|\(name)".utf8))
            let check = HMAC<SHA256>.authenticationCode(
                for: Data("TokenKit.FileTokenStore.key-check".utf8), using: key)
            envelope =
                #"{"formatVersion":1,"sealed":{"algorithm":"AES-GCM","box":"\#(box.combined!.base64EncodedString())","#
                + #""keyCheck":"\#(Data(Array(check).prefix(8)).base64EncodedString())"}}"#
        }
        let path = directory.appendingPathComponent(name).path
        try Data(envelope.utf8).write(to: URL(fileURLWithPath: path))
        _ = chmod(path, 0o600)
        return name
    }

    @Test(arguments: [false, true])
    func aSessionUnderTheEarlierNameIsReadAndRenamed(sealed: Bool) async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let key = sealed ? SymmetricKey(size: .bits256) : nil
        let session = sampleSession(generation: 4)
        let earlier = try Self.writeEarlierFile(
            session, account: Self.account, in: temporary.storeDirectory, key: key)
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: .init(encryptionKey: key))

        #expect(await store.load(account: Self.account).session == session)

        let names = directoryNames(temporary.storeDirectory)
        #expect(!names.contains(earlier), "the earlier file is renamed")
        #expect(!names.contains { $0.contains(Self.plainHash(Self.account)) })
        let renamed = URL(fileURLWithPath: store.filePath(account: Self.account)).lastPathComponent
        #expect(names.contains(renamed))
        #expect(permissions(store.filePath(account: Self.account)) == 0o600)
        // Read again, by this store and a fresh one, and written over with a generation condition.
        #expect(await store.load(account: Self.account).session == session)
        let reopened = FileTokenStore(directory: temporary.storeDirectory, configuration: .init(encryptionKey: key))
        #expect(await reopened.load(account: Self.account).session == session)
        try await reopened.save(sampleSession(generation: 5), account: Self.account, condition: .generation(4))
        #expect(await store.load(account: Self.account).session?.generation == 5)
    }

    @Test func aSaveOrARemovalFindsTheSessionUnderTheEarlierName() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let earlier = try Self.writeEarlierFile(
            sampleSession(generation: 2), account: Self.account, in: temporary.storeDirectory, key: nil)
        let store = FileTokenStore(directory: temporary.storeDirectory)
        // The stored generation is the earlier file's: a save that expects none is refused.
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(sampleSession(generation: 3), account: Self.account, condition: .absent)
        }
        try await store.remove(account: Self.account, condition: .generation(2))
        #expect(await store.load(account: Self.account).isAbsent)
        #expect(!directoryNames(temporary.storeDirectory).contains(earlier))
    }
}

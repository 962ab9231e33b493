import AuthToken
import Crypto
import Foundation
import Logging
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

@Suite(.logLeakCheck()) struct FileTokenStoreTests {
    @Test func savedSessionLoadsBackEqualAfterAFreshStoreOpensTheDirectory() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let session = sampleSession(generation: 7)
        try await FileTokenStore(directory: temporary.storeDirectory).save(
            session, account: "alice", condition: .absent)
        let reopened = FileTokenStore(directory: temporary.storeDirectory)
        #expect(await reopened.load(account: "alice").session == session)
        #expect(await reopened.load(account: "bob").isAbsent)
    }

    @Test func aServerTimeOffsetIsKeptWithTheSessionAndARecordWithoutOneLoads() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let session = sampleSession(generation: 3).with(serverTimeOffset: -3600)
        try await store.save(session, account: "alice", condition: .absent)
        let reopened = FileTokenStore(directory: temporary.storeDirectory)
        #expect(await reopened.load(account: "alice").session?.serverTimeOffset == -3600)
        try await store.save(sampleSession(generation: 4), account: "alice", condition: .generation(3))
        let loaded = await reopened.load(account: "alice").session
        #expect(loaded?.generation == 4 && loaded?.serverTimeOffset == nil)
    }

    @Test func aRecordOfServerFailuresIsKeptAtTheSameGenerationAndASuccessClearsIt() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let session = sampleSession(generation: 3)
        try await store.save(session, account: "alice", condition: .absent)
        // The record is written with the session as stored: the same generation, conditional on it.
        let failures = [Date(timeIntervalSince1970: 1_800_000_000), Date(timeIntervalSince1970: 1_800_000_030)]
        try await store.save(
            session.with(recentServerFailures: failures), account: "alice",
            condition: .session(session.sessionID, generation: 3))
        let reopened = FileTokenStore(directory: temporary.storeDirectory)
        let loaded = await reopened.load(account: "alice").session
        #expect(loaded?.recentServerFailures == failures && loaded?.generation == 3)
        #expect(loaded?.token == session.token && loaded?.sessionID == session.sessionID)
        try await store.save(sampleSession(generation: 4), account: "alice", condition: .generation(3))
        #expect(await reopened.load(account: "alice").session?.recentServerFailures == nil)
    }

    @Test func aMissingDirectoryIsAbsentNotAnError() async {
        let store = FileTokenStore(directory: URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/sessions"))
        #expect(await store.load(account: "alice").isAbsent)
    }

    @Test func createsAPrivateDirectoryAndPrivateFiles() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let nested = temporary.storeDirectory.appendingPathComponent("deeper/still")
        let store = FileTokenStore(directory: nested)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        #expect(permissions(nested.path) == 0o700)
        #expect(permissions(temporary.storeDirectory.path) == 0o700)
        #expect(permissions(store.filePath(account: "alice")) == 0o600)
    }

    @Test(arguments: ["alice", "a/b/../c", "", "ünïcödé 👩‍💻", String(repeating: "long", count: 200), ".."])
    func anyAccountStringMakesASafeFileNameThatDoesNotRevealIt(account: String) async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(sampleSession(generation: 1), account: account, condition: .always)
        #expect(await store.load(account: account).session?.generation == 1)
        let path = store.filePath(account: account)
        #expect(URL(fileURLWithPath: path).deletingLastPathComponent().path == temporary.storeDirectory.path)
        for name in directoryNames(temporary.storeDirectory) where !account.isEmpty {
            #expect(!name.contains(account))
        }
    }

    @Test func conditionalWritesCompareTheStoredGeneration() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(sampleSession(generation: 1), account: "a", condition: .absent)
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(sampleSession(generation: 9), account: "a", condition: .absent)
        }
        try await store.save(sampleSession(generation: 2), account: "a", condition: .generation(1))
        await #expect(throws: PersistenceError.conflict) {
            try await store.save(sampleSession(generation: 3), account: "a", condition: .generation(1))
        }
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "a", condition: .generation(1))
        }
        #expect(await store.load(account: "a").session?.generation == 2)
        try await store.remove(account: "a", condition: .generation(2))
        #expect(await store.load(account: "a").isAbsent)
        try await store.remove(account: "a", condition: .always)
        await #expect(throws: PersistenceError.conflict) {
            try await store.remove(account: "a", condition: .generation(2))
        }
    }

    @Test func encryptedSessionsRoundTripAndNoTokenTextReachesTheDisk() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let key = SymmetricKey(size: .bits256)
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: .init(encryptionKey: key))
        let session = sampleSession(generation: 4)
        try await store.save(session, account: "alice", condition: .always)
        let bytes = try Data(contentsOf: URL(fileURLWithPath: store.filePath(account: "alice")))
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(!text.contains("secret-access"))
        #expect(!text.contains("secret-refresh"))
        #expect(!text.contains("user-1"))
        #expect(await store.load(account: "alice").session == session)
    }

    @Test func aWrongKeyIsReportedAndTheFileIsLeftAlone() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let right = FileTokenStore(
            directory: temporary.storeDirectory, configuration: .init(encryptionKey: SymmetricKey(size: .bits256)))
        try await right.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let path = right.filePath(account: "alice")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let wrong = FileTokenStore(
            directory: temporary.storeDirectory, configuration: .init(encryptionKey: SymmetricKey(size: .bits256)))
        #expect(await wrong.load(account: "alice").error == .wrongKey)
        await #expect(throws: PersistenceError.wrongKey) {
            try await wrong.save(sampleSession(generation: 2), account: "alice", condition: .always)
        }
        let plain = FileTokenStore(directory: temporary.storeDirectory)
        #expect(await plain.load(account: "alice").error == .wrongKey)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(await right.load(account: "alice").session?.generation == 1)
    }

    @Test func anEncryptedStoreRefusesAPlainFile() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        try await FileTokenStore(directory: temporary.storeDirectory)
            .save(sampleSession(generation: 1), account: "alice", condition: .always)
        let encrypted = FileTokenStore(
            directory: temporary.storeDirectory, configuration: .init(encryptionKey: SymmetricKey(size: .bits128)))
        #expect(await encrypted.load(account: "alice").error == .wrongKey)
    }

    @Test func aSealedFileCopiedToAnotherAccountDoesNotOpenAndIsKeptAside() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(
            directory: temporary.storeDirectory, configuration: .init(encryptionKey: SymmetricKey(size: .bits256)))
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let aliceBytes = try Data(contentsOf: URL(fileURLWithPath: store.filePath(account: "alice")))
        try aliceBytes.write(to: URL(fileURLWithPath: store.filePath(account: "mallory")))
        _ = chmod(store.filePath(account: "mallory"), 0o600)
        #expect(await store.load(account: "mallory").error == .corrupt)
        let aside = store.filePath(account: "mallory") + ".corrupt-1"
        #expect(try Data(contentsOf: URL(fileURLWithPath: aside)) == aliceBytes)
    }

    /// A directory made by `mkdir -p` (0755) used to be refused, so every save failed.
    @Test func aDirectoryMadeByMkdirIsTightenedTo0700AndUsed() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        try FileManager.default.createDirectory(
            at: temporary.storeDirectory, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        let capture = LogCapture()
        let store = FileTokenStore(
            directory: temporary.storeDirectory, logger: capture.logger())
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        #expect(await store.load(account: "alice").session?.generation == 1)
        let mode = try FileManager.default.attributesOfItem(atPath: temporary.storeDirectory.path)[.posixPermissions]
        #expect((mode as? NSNumber)?.intValue == 0o700)
        #expect(capture.lines.contains { $0.contains("tightened the session directory to mode 700") })
    }

    @Test func aWidenedDirectoryHoldingOnlyTheStoresFilesIsTightened() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        _ = chmod(temporary.storeDirectory.path, 0o755)
        #expect(await store.load(account: "alice").session?.generation == 1)
        try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
    }

    @Test func aWideDirectoryWithOtherFilesIsRefusedWithAnErrorThatSaysWhy() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        try Data("notes".utf8).write(to: temporary.storeDirectory.appendingPathComponent("notes.txt"))
        _ = chmod(temporary.storeDirectory.path, 0o755)
        let error = try #require(await store.load(account: "alice").error)
        #expect(error == .permissionsTooWide)
        let detail = try #require(error.detail)
        #expect(detail.contains(temporary.storeDirectory.standardizedFileURL.path))
        #expect(detail.contains("mode 755"))
        #expect(detail.contains("needs 700"))
        await #expect(throws: PersistenceError.permissionsTooWide) {
            try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        }
        _ = chmod(temporary.storeDirectory.path, 0o700)
        #expect(await store.load(account: "alice").session?.generation == 1)
    }

    /// The owner check without root: a store told to expect another owner refuses this user's directory, and
    /// names both user IDs and the path.
    @Test func aDirectoryOfAnotherOwnerIsRefusedAndTheErrorSaysWhose() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        try await FileTokenStore(directory: temporary.storeDirectory)
            .save(sampleSession(generation: 1), account: "alice", condition: .always)
        var configuration = FileTokenStore.Configuration()
        configuration.expectedOwner = geteuid() &+ 1
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: configuration)

        let error = try #require(await store.load(account: "alice").error)

        #expect(error == .ownedByAnotherUser)
        #expect(error.detail?.contains("belongs to user \(geteuid()), not \(geteuid() &+ 1)") == true)
        await #expect(throws: PersistenceError.ownedByAnotherUser) {
            try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        }
        await #expect(throws: PersistenceError.ownedByAnotherUser) {
            try await store.remove(account: "alice", condition: .always)
        }
    }

    @Test func widerFilePermissionsAreRefused() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        _ = chmod(store.filePath(account: "alice"), 0o644)
        #expect(await store.load(account: "alice").error == .permissionsTooWide)
        await #expect(throws: PersistenceError.permissionsTooWide) {
            try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        }
        _ = chmod(store.filePath(account: "alice"), 0o600)
        #expect(await store.load(account: "alice").session?.generation == 1)
    }

    @Test func logsNeverContainTokenText() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let capture = LogCapture()
        let store = FileTokenStore(directory: temporary.storeDirectory, logger: capture.logger())
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        _ = await store.load(account: "alice")
        try await store.withExclusiveAccess(account: "alice") {
            try await store.save(sampleSession(generation: 2), account: "alice", condition: .generation(1))
        }
        try Data("{".utf8).write(to: URL(fileURLWithPath: store.filePath(account: "alice")))
        _ = await store.load(account: "alice")
        try await store.remove(account: "alice", condition: .always)
        let lines = capture.lines
        #expect(lines.count >= 4)
        for line in lines {
            #expect(!line.contains("secret-"), "a log line carries token text")
        }
    }
}

@Suite(.logLeakCheck()) struct FileTokenStoreLockTests {
    @Test func tasksSharingTheDirectoryThroughTwoStoresLoseNoUpdate() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        // No lock timeout: this test is about lost updates, and a loaded machine may starve a holder for seconds.
        let unbounded = FileTokenStore.Configuration(lockTimeout: nil)
        let stores = [
            FileTokenStore(directory: temporary.storeDirectory, configuration: unbounded),
            FileTokenStore(
                directory: URL(fileURLWithPath: temporary.storeDirectory.path + "/"), configuration: unbounded),
        ]
        let tasks = 6
        let rounds = 10
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<tasks {
                let store = stores[index % stores.count]
                group.addTask {
                    for _ in 0..<rounds {
                        try await store.withExclusiveAccess(account: "shared") {
                            let current = await store.load(account: "shared").session?.generation ?? 0
                            await Task.yield()  // give a broken lock every chance to interleave
                            // Unconditional on purpose: only the lock prevents a lost update.
                            try await store.save(
                                probeSession(generation: current + 1), account: "shared", condition: .always)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await stores[0].load(account: "shared").session?.generation == UInt64(tasks * rounds))
    }

    @Test func aWriteConditionIsCheckedUnderTheLock() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        // No lock timeout: this test is about conditions, and a loaded machine may starve a holder for seconds.
        let store = FileTokenStore(directory: temporary.storeDirectory, configuration: .init(lockTimeout: nil))
        try await store.save(sampleSession(generation: 1), account: "a", condition: .always)
        // Many writers race from the same generation: exactly one may win.
        let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask {
                    do {
                        try await store.save(
                            sampleSession(generation: UInt64(10 + index)), account: "a", condition: .generation(1))
                        return true
                    } catch let error as PersistenceError where error == .conflict {
                        return false
                    }
                }
            }
            return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(wins == 1)
    }

    @Test func aTaskWaitingForTheLockCanBeCancelled() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        let release = HoldGate()
        let holder = Task { try await store.withExclusiveAccess(account: "a") { await release.wait() } }
        await release.waitForArrivals(1)
        let waiter = Task {
            try await store.withExclusiveAccess(account: "a") { "ran" }
        }
        waiter.cancel()
        await #expect(throws: PersistenceError.lockFailed) { try await waiter.value }
        release.open()
        try await holder.value
        #expect(try await store.withExclusiveAccess(account: "a") { "free again" } == "free again")
    }

    @Test(.timeLimit(.minutes(10))) func aTaskWaitingForTheLockGivesUpAfterTheLockTimeout() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(
            directory: temporary.storeDirectory,
            configuration: .init(lockTimeout: .milliseconds(50), liveHolderTimeout: .milliseconds(50)))
        let release = HoldGate()
        let holder = Task { try await store.withExclusiveAccess(account: "a") { await release.wait() } }
        await release.waitForArrivals(1)
        await #expect(throws: PersistenceError.lockTimedOut) {
            try await store.withExclusiveAccess(account: "a") { "ran" }
        }
        await #expect(throws: PersistenceError.lockTimedOut) {
            try await store.save(sampleSession(generation: 1), account: "a", condition: .always)
        }
        release.open()
        try await holder.value
        #expect(try await store.withExclusiveAccess(account: "a") { "free again" } == "free again")
    }

    @Test func theLockIsReleasedWhenTheBodyThrows() async throws {
        struct Boom: Error {}
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = FileTokenStore(directory: temporary.storeDirectory)
        await #expect(throws: Boom.self) {
            try await store.withExclusiveAccess(account: "a") { throw Boom() }
        }
        try await store.save(sampleSession(generation: 1), account: "a", condition: .always)
        #expect(await store.load(account: "a").session?.generation == 1)
    }
}

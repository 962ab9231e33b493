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

/// Damaged, foreign and unwritable inputs: each gives a typed error, keeps what was stored, and deletes nothing.
@Suite(.logLeakCheck()) struct FileTokenStoreBadInputTests {
    /// Contents that are not a session this code can read, because they are damaged.
    struct DamagedContents: CustomTestStringConvertible, Sendable {
        let name: String
        let encrypted: Bool
        let bytes: @Sendable (_ validFile: [UInt8]) -> [UInt8]
        var testDescription: String { name }
    }

    static let damagedContents: [DamagedContents] = [
        DamagedContents(name: "truncated file", encrypted: false) { Array($0.prefix($0.count / 2)) },
        DamagedContents(name: "truncated sealed file", encrypted: true) { Array($0.prefix($0.count - 20)) },
        DamagedContents(name: "empty file", encrypted: false) { _ in [] },
        DamagedContents(name: "file of zeros", encrypted: false) { [UInt8](repeating: 0, count: $0.count) },
        DamagedContents(name: "random bytes", encrypted: false) { _ in (0..<300).map { UInt8(($0 * 37 + 11) % 256) } },
        DamagedContents(name: "JSON array", encrypted: false) { _ in Array("[1,2,3]".utf8) },
        DamagedContents(name: "JSON of another shape", encrypted: false) { _ in Array(#"{"hello":"world"}"#.utf8) },
        DamagedContents(name: "session of the wrong shape", encrypted: false) { _ in
            Array(#"{"formatVersion":1,"session":{"token":"not an object","generation":-1}}"#.utf8)
        },
        DamagedContents(name: "envelope with neither session nor box", encrypted: false) { _ in
            Array(#"{"formatVersion":1}"#.utf8)
        },
        DamagedContents(name: "format version zero", encrypted: false) { _ in Array(#"{"formatVersion":0}"#.utf8) },
        DamagedContents(name: "sealed box with a flipped bit", encrypted: true) { valid in
            // Flip a bit inside the base64 of the box, keeping it valid base64.
            var text = String(decoding: valid, as: UTF8.self)
            let range = text.range(of: #""box":""#)!
            let index = text.index(range.upperBound, offsetBy: 30)
            let replacement: Character = text[index] == "A" ? "B" : "A"
            text.replaceSubrange(index...index, with: String(replacement))
            return Array(text.utf8)
        },
    ]

    private static let key = SymmetricKey(data: Data(repeating: 7, count: 32))

    private func store(_ directory: URL, encrypted: Bool, faults: FileFaults = .none) -> FileTokenStore {
        var configuration = FileTokenStore.Configuration(encryptionKey: encrypted ? Self.key : nil)
        configuration.faults = faults
        return FileTokenStore(directory: directory, configuration: configuration)
    }

    @Test(arguments: damagedContents)
    func damagedFileIsReportedCorruptAndKeptAsideByteForByte(_ damage: DamagedContents) async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: damage.encrypted)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let path = store.filePath(account: "alice")
        let valid = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let damaged = damage.bytes(valid)
        try Data(damaged).write(to: URL(fileURLWithPath: path))

        let read = await store.load(account: "alice")
        #expect(read.error == .corrupt)
        #expect(read.error?.detail?.contains("secret-") == false)
        let aside = URL(fileURLWithPath: path + ".corrupt-1")
        #expect(try [UInt8](Data(contentsOf: aside)) == damaged, "the damaged bytes must be kept")
        #expect(permissions(aside.path) == 0o600)
        // Reported once, then the account reads as signed out; the next sign-in writes a fresh file.
        #expect(await store.load(account: "alice").isAbsent)
        try await store.save(sampleSession(generation: 2), account: "alice", condition: .absent)
        #expect(await store.load(account: "alice").session?.generation == 2)
        #expect(try [UInt8](Data(contentsOf: aside)) == damaged)
    }

    @Test func aSecondDamagedFileIsKeptNextToTheFirst() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: false)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let path = store.filePath(account: "alice")
        try Data("first".utf8).write(to: URL(fileURLWithPath: path))
        #expect(await store.load(account: "alice").error == .corrupt)
        try Data("second".utf8).write(to: URL(fileURLWithPath: path))
        _ = chmod(path, 0o600)
        // A save finds it in the way: it moves it aside too, and writes.
        try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        #expect(try String(contentsOfFile: path + ".corrupt-1", encoding: .utf8) == "first")
        #expect(try String(contentsOfFile: path + ".corrupt-2", encoding: .utf8) == "second")
        #expect(await store.load(account: "alice").session?.generation == 2)
    }

    @Test func aFileFromANewerFormatVersionIsLeftInPlaceAndNotOverwritten() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: false)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let path = store.filePath(account: "alice")
        let newer = Data(#"{"formatVersion":2,"somethingNew":{"generation":5}}"#.utf8)
        try newer.write(to: URL(fileURLWithPath: path))

        #expect(await store.load(account: "alice").error == .unsupportedFormatVersion)
        await #expect(throws: PersistenceError.unsupportedFormatVersion) {
            try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        }
        await #expect(throws: PersistenceError.unsupportedFormatVersion) {
            try await store.remove(account: "alice", condition: .generation(1))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == newer)
        #expect(directoryNames(temporary.storeDirectory).filter { $0.contains(".corrupt-") }.isEmpty)
        // Only an explicit, unconditional removal (a sign-out) clears the way, and it leaves no copy behind.
        try await store.remove(account: "alice", condition: .always)
        #expect(await store.load(account: "alice").isAbsent)
        #expect(
            directoryNames(temporary.storeDirectory).filter {
                $0.hasPrefix("session-") && !$0.hasSuffix(".lock") && $0 != "session-naming-key"
            }.isEmpty)
    }

    @Test func aDirectoryWhereTheFileShouldBeIsNotAFile() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: false)
        try await store.save(sampleSession(generation: 1), account: "bob", condition: .always)
        let path = store.filePath(account: "alice")
        try FileManager.default.createDirectory(atPath: path + "/inside", withIntermediateDirectories: true)

        #expect(await store.load(account: "alice").error == .notAFile)
        await #expect(throws: PersistenceError.notAFile) {
            try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        }
        await #expect(throws: PersistenceError.notAFile) {
            try await store.remove(account: "alice", condition: .always)
        }
        #expect(FileManager.default.fileExists(atPath: path + "/inside"))
        #expect(await store.load(account: "bob").session?.generation == 1)
    }

    @Test func aSymbolicLinkWhereTheFileShouldBeIsNotFollowed() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: false)
        try await store.save(sampleSession(generation: 1), account: "bob", condition: .always)
        try FileManager.default.createSymbolicLink(
            atPath: store.filePath(account: "alice"), withDestinationPath: store.filePath(account: "bob"))
        #expect(await store.load(account: "alice").error == .notAFile)
    }

    @Test func aFileWhereTheDirectoryShouldBeIsNotAFile() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        try Data("x".utf8).write(to: temporary.storeDirectory)
        let store = store(temporary.storeDirectory, encrypted: false)
        #expect(await store.load(account: "alice").error == .notAFile)
        await #expect(throws: PersistenceError.notAFile) {
            try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        }
        #expect(try String(contentsOf: temporary.storeDirectory, encoding: .utf8) == "x")
    }

    /// A file-system step made to fail, as a read-only directory or a full disk would.
    struct WriteFault: CustomTestStringConvertible, Sendable {
        let name: String
        let step: FileStep
        let errno: Int32
        let errnoName: String
        var testDescription: String { name }
    }

    static let writeFaults: [WriteFault] = [
        WriteFault(
            name: "read-only directory (EROFS creating the temporary)", step: .createTemporary, errno: EROFS,
            errnoName: "EROFS"),
        WriteFault(
            name: "no permission (EACCES creating the temporary)", step: .createTemporary, errno: EACCES,
            errnoName: "EACCES"),
        WriteFault(name: "full disk (ENOSPC writing)", step: .write, errno: ENOSPC, errnoName: "ENOSPC"),
        WriteFault(name: "quota exceeded (EDQUOT writing)", step: .write, errno: EDQUOT, errnoName: "EDQUOT"),
        WriteFault(name: "I/O error on fsync", step: .syncFile, errno: EIO, errnoName: "EIO"),
        WriteFault(name: "delayed write error on close", step: .close, errno: EIO, errnoName: "EIO"),
        WriteFault(name: "read-only file system at rename", step: .rename, errno: EROFS, errnoName: "EROFS"),
        WriteFault(name: "lock file cannot be created", step: .openLockFile, errno: EROFS, errnoName: "EROFS"),
    ]

    @Test(arguments: writeFaults, [false, true])
    func aFailingWriteKeepsThePreviousSessionAndLeavesNoDebris(_ fault: WriteFault, encrypted: Bool) async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let healthy = store(temporary.storeDirectory, encrypted: encrypted)
        try await healthy.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let path = healthy.filePath(account: "alice")
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        let namesBefore = directoryNames(temporary.storeDirectory)

        let failing = store(
            temporary.storeDirectory, encrypted: encrypted,
            faults: FileFaults { step in
                step == fault.step ? fault.errno : nil
            })
        let expected: PersistenceError = fault.step == .openLockFile ? .lockFailed : .writeFailed
        do {
            try await failing.save(sampleSession(generation: 2), account: "alice", condition: .generation(1))
            Issue.record("the save should have failed")
        } catch {
            #expect(error == expected)
            #expect(error.detail?.contains(fault.errnoName) == true)
            #expect(error.description.contains("secret-") == false)
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(directoryNames(temporary.storeDirectory) == namesBefore, "no temporary or aside file is left")
        #expect(await healthy.load(account: "alice").session == sampleSession(generation: 1))
        // The failure leaves nothing in the way: the same write succeeds once the disk is healthy again.
        try await healthy.save(sampleSession(generation: 2), account: "alice", condition: .generation(1))
        #expect(await healthy.load(account: "alice").session?.generation == 2)
    }

    @Test(arguments: [EIO, EAGAIN, EINTR])
    func aWriteThatFailsOnceWithATransientErrorIsRetriedAndLands(_ code: Int32) async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let writes = Locked(0)
        let flaky = store(
            temporary.storeDirectory, encrypted: false,
            faults: FileFaults { step in
                guard step == .write else { return nil }
                return writes.withLock { count in
                    count += 1
                    return count == 1 ? code : nil
                }
            })
        try await flaky.save(sampleSession(generation: 1), account: "alice", condition: .absent)
        #expect(writes.withLock { $0 } == 2)
        #expect(await flaky.load(account: "alice").session == sampleSession(generation: 1))
        #expect(directoryNames(temporary.storeDirectory).filter { $0.contains(".tmp-") }.isEmpty)
    }

    @Test func aWriteThatKeepsFailingWithATransientErrorGivesUpAfterThreeAttempts() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let healthy = store(temporary.storeDirectory, encrypted: false)
        try await healthy.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let writes = Locked(0)
        let failing = store(
            temporary.storeDirectory, encrypted: false,
            faults: FileFaults { step in
                guard step == .write else { return nil }
                writes.withLock { $0 += 1 }
                return EIO
            })
        await #expect(throws: PersistenceError.writeFailed) {
            try await failing.save(sampleSession(generation: 2), account: "alice", condition: .generation(1))
        }
        #expect(writes.withLock { $0 } == 3)
        #expect(await healthy.load(account: "alice").session?.generation == 1)
    }

    @Test func aFullDiskIsNotRetried() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let writes = Locked(0)
        let full = store(
            temporary.storeDirectory, encrypted: false,
            faults: FileFaults { step in
                guard step == .write else { return nil }
                writes.withLock { $0 += 1 }
                return ENOSPC
            })
        await #expect(throws: PersistenceError.writeFailed) {
            try await full.save(sampleSession(generation: 1), account: "alice", condition: .absent)
        }
        #expect(writes.withLock { $0 } == 1)
    }

    @Test func aFailedRemovalKeepsTheSession() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let healthy = store(temporary.storeDirectory, encrypted: false)
        try await healthy.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let failing = store(
            temporary.storeDirectory, encrypted: false, faults: FileFaults { $0 == .unlink ? EROFS : nil })
        await #expect(throws: PersistenceError.writeFailed) {
            try await failing.remove(account: "alice", condition: .generation(1))
        }
        #expect(await healthy.load(account: "alice").session?.generation == 1)
    }

    @Test func aDirectorySyncFailureAfterTheRenameIsReportedNotHidden() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let healthy = store(temporary.storeDirectory, encrypted: false)
        try await healthy.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let failing = store(
            temporary.storeDirectory, encrypted: false, faults: FileFaults { $0 == .syncDirectory ? EIO : nil })
        do {
            try await failing.save(sampleSession(generation: 2), account: "alice", condition: .generation(1))
            Issue.record("the save should have reported the directory sync failure")
        } catch {
            #expect(error == .writeFailed)
            #expect(error.detail?.contains("fsync(directory)") == true)
        }
        // The rename had happened: the new session is whole, and the old one was never damaged.
        #expect(await healthy.load(account: "alice").session?.generation == 2)
    }

    @Test func aFailureToCreateTheDirectoryIsAWriteFailure() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let failing = store(
            temporary.storeDirectory, encrypted: false, faults: FileFaults { $0 == .createDirectory ? EROFS : nil })
        await #expect(throws: PersistenceError.writeFailed) {
            try await failing.save(sampleSession(generation: 1), account: "alice", condition: .always)
        }
        #expect(!FileManager.default.fileExists(atPath: temporary.storeDirectory.path))
    }

    @Test func aDamagedFileThatCannotBeMovedAsideStaysWhereItIs() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let healthy = store(temporary.storeDirectory, encrypted: false)
        try await healthy.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let path = healthy.filePath(account: "alice")
        try Data("{broken".utf8).write(to: URL(fileURLWithPath: path))
        let failing = store(
            temporary.storeDirectory, encrypted: false, faults: FileFaults { $0 == .moveAside ? EROFS : nil })
        let read = await failing.load(account: "alice")
        #expect(read.error == .corrupt)
        #expect(read.error?.detail?.contains("left in place") == true)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == "{broken")
        #expect(await healthy.load(account: "alice").error == .corrupt)
        #expect(try String(contentsOfFile: path + ".corrupt-1", encoding: .utf8) == "{broken")
    }

    @Test func staleTemporaryFilesFromADeadWriterAreCleanedUpByTheNextSave() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: false)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let stale = store.filePath(account: "alice") + ".tmp-99999-dead"
        try Data("half a sess".utf8).write(to: URL(fileURLWithPath: stale))
        let otherAccountsTemporary = store.filePath(account: "bob") + ".tmp-99999-dead"
        try Data("not mine".utf8).write(to: URL(fileURLWithPath: otherAccountsTemporary))
        #expect(await store.load(account: "alice").session?.generation == 1)
        try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        #expect(!FileManager.default.fileExists(atPath: stale))
        #expect(FileManager.default.fileExists(atPath: otherAccountsTemporary))
    }

    /// A process killed while it created the naming key leaves its temporary file (after the link, a second name of
    /// the key); no later key creation runs to remove it, so the next save does, unless its creator still runs.
    @Test func aNamingKeyTemporaryOfAKilledCreatorIsCleanedUpByTheNextSave() async throws {
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let store = store(temporary.storeDirectory, encrypted: false)
        try await store.save(sampleSession(generation: 1), account: "alice", condition: .always)
        let directory = temporary.storeDirectory.path
        // No process runs with an ID above the kernel's limit (2^22 on Linux, 99,999 on macOS): an ended creator.
        let abandoned = directory + "/session-naming-key.tmp-\(Int32.max)-k1ll3d"
        // This process stands for a creator still at work: its temporary is its own to remove.
        let running = directory + "/session-naming-key.tmp-\(getpid())-w0rk1ng"
        for path in [abandoned, running] {
            let made = FileManager.default.createFile(
                atPath: path, contents: Data(count: 32), attributes: [.posixPermissions: 0o600])
            #expect(made)
        }
        try await store.save(sampleSession(generation: 2), account: "alice", condition: .always)
        #expect(!FileManager.default.fileExists(atPath: abandoned), "the killed creator's temporary is left")
        #expect(FileManager.default.fileExists(atPath: running), "a running creator's temporary was removed")
        #expect(await store.load(account: "alice").session?.generation == 2)
    }
}

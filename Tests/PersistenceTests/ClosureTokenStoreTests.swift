import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTestSupport
import TokenKitTesting

@Suite(.logLeakCheck()) struct ClosureTokenStoreTests {
    @Test func callsTheClosuresWithTheirArguments() async throws {
        let calls = Locked<[String]>([])
        let store = ClosureTokenStore(
            load: { account in
                calls.withLock { $0.append("load \(account)") }
                return .absent
            },
            save: { session, account, condition in
                calls.withLock { $0.append("save \(account) \(session.generation) \(condition == .absent)") }
            },
            remove: { account, condition in
                calls.withLock { $0.append("remove \(account) \(condition == .generation(4))") }
            })
        #expect(await store.load(account: "a").isAbsent)
        try await store.save(sampleSession(generation: 3), account: "b", condition: .absent)
        try await store.remove(account: "c", condition: .generation(4))
        #expect(calls.withLock { $0 } == ["load a", "save b 3 true", "remove c true"])
    }

    @Test func reportsAnUnavailableStoreAndAFailingWrite() async {
        let store = ClosureTokenStore(
            load: { _ in .unavailable(.unavailable) },
            save: { _, _, _ in throw PersistenceError.writeFailed },
            remove: { _, _ in throw PersistenceError.writeFailed })
        #expect(await store.load(account: "a").error == .unavailable)
        await #expect(throws: PersistenceError.writeFailed) {
            try await store.save(sampleSession(generation: 1), account: "a", condition: .always)
        }
    }

    @Test func reportsAForeignErrorAsAWriteFailure() async {
        struct Foreign: Error {}
        let store = ClosureTokenStore(load: { _ in .absent }, save: { _, _, _ in throw Foreign() }, remove: { _, _ in })
        await #expect(throws: PersistenceError.writeFailed) {
            try await store.save(sampleSession(generation: 1), account: "a", condition: .always)
        }
    }

    @Test func forwardsToAnotherStoreReplacingOneOperation() async throws {
        let inner = InMemoryTokenStore(sessions: ["a": sampleSession(generation: 1)])
        let store = ClosureTokenStore(forwardingTo: inner, save: { _, _, _ in throw PersistenceError.writeFailed })
        #expect(await store.load(account: "a").session?.generation == 1)
        await #expect(throws: PersistenceError.writeFailed) {
            try await store.save(sampleSession(generation: 2), account: "a", condition: .always)
        }
        try await store.remove(account: "a", condition: .generation(1))
        #expect(await inner.load(account: "a").isAbsent)
    }

    @Test func exclusiveAccessRunsTheBodyInsideTheLockClosureAndReturnsItsValue() async throws {
        let events = Locked<[String]>([])
        let store = ClosureTokenStore(
            load: { _ in .absent }, save: { _, _, _ in }, remove: { _, _ in },
            exclusiveAccess: { account, body in
                events.withLock { $0.append("lock \(account)") }
                try await body()
                events.withLock { $0.append("unlock \(account)") }
            })
        let value = try await store.withExclusiveAccess(account: "a") {
            events.withLock { $0.append("body") }
            return 42
        }
        #expect(value == 42)
        #expect(events.withLock { $0 } == ["lock a", "body", "unlock a"])
    }

    @Test func exclusiveAccessThatSkipsTheBodyIsALockFailure() async {
        let store = ClosureTokenStore(
            load: { _ in .absent }, save: { _, _, _ in }, remove: { _, _ in },
            exclusiveAccess: { _, _ in })
        await #expect(throws: PersistenceError.lockFailed) {
            try await store.withExclusiveAccess(account: "a") { 1 }
        }
    }
}

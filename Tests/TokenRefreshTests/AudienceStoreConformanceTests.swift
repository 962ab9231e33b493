import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// An audience client's view of the shared session keeps the store contract the client relies on: exclusion across
/// the views of one process (and, through the store's own, across processes), nested access without deadlock,
/// conditional writes.
@Suite(.logLeakCheck()) struct AudienceStoreConformanceTests {
    @Test func anAudienceViewKeepsTheStoreContract() async throws {
        let hub = AudienceHub(base: InMemoryTokenStore())
        let conformance = TokenStoreConformance {
            AudienceTokenStore(hub: hub, key: "billing", now: { Date(timeIntervalSince1970: 1_800_000_000) })
        }
        try await conformance.check()
    }

    /// A view waiting for the process's turn at an account while another audience's view holds it stops waiting
    /// when its task is cancelled, as a store's own wait does: ``PersistenceError/lockFailed``, its body never run.
    @Test func aCancelledWaitForAnotherAudiencesExclusiveAccessEndsWithoutRunningItsBody() async throws {
        let hub = AudienceHub(base: InMemoryTokenStore())
        let now = { @Sendable in Date(timeIntervalSince1970: 1_800_000_000) }
        let billing = AudienceTokenStore(hub: hub, key: "billing", now: now)
        let profile = AudienceTokenStore(hub: hub, key: "profile", now: now)
        let (entered, inside) = AsyncStream<Void>.makeStream()
        let (released, release) = AsyncStream<Void>.makeStream()
        let holder = Task {
            try await billing.withExclusiveAccess(account: "shared") {
                inside.yield()
                for await _ in released { break }
                return "held"
            }
        }
        for await _ in entered { break }
        let ran = Locked(false)
        let waiter = Task { try await profile.withExclusiveAccess(account: "shared") { ran.withLock { $0 = true } } }
        waiter.cancel()
        release.yield()
        #expect(try await holder.value == "held")
        let error = await #expect(throws: PersistenceError.self) { try await waiter.value }
        #expect(error == .lockFailed)
        #expect(!ran.withLock { $0 }, "the cancelled wait ran its body")
        // The account is free again: the next view's body runs.
        #expect(try await profile.withExclusiveAccess(account: "shared") { "next" } == "next")
    }
}

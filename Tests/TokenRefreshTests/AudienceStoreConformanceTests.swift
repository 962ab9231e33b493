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
}

import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

/// Re-read before refresh, when the store cannot be read: the stored pair is the truth another process may have
/// rotated, and a new pair could not be kept there either, so nothing is presented to the server.
@Suite(.logLeakCheck()) struct RereadRuleTests {
    @Test func anExpiredSessionWhoseStoreCannotBeReadPresentsNothingAndIsKept() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store)
        await rig.client.restoreSession()
        // Another process may have rotated the pair meanwhile; the store cannot tell, it cannot be read.
        await store.setUnavailable(true)

        let error = await refreshError { try await rig.client.validToken() }
        #expect(error == .storageUnavailable)
        #expect(await rig.server.refreshCount == 0)
        #expect(rig.client.currentState.hasSession)
    }

    @Test func aStillValidTokenIsHandedOutWhileTheStoreCannotBeRead() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store, expired: false)
        await rig.client.restoreSession()
        rig.clock.advance(by: .seconds(3500))  // due for a proactive refresh, not yet expired
        await store.setUnavailable(true)

        #expect(try await rig.client.validToken() == rig.initial)
        #expect(await rig.server.refreshCount == 0)
    }
}

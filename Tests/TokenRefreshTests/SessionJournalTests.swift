import AuthToken
import Foundation
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting

@testable import TokenRefresh

@Suite(.logLeakCheck()) struct SessionJournalTests {
    @Test func theLastEntrySaysWhyTheSessionEndedAndWhichTokenItHeld() async throws {
        let rig = try await Rig.make()
        let refreshed = try await rig.client.validToken()
        await rig.server.enqueue(.invalidGrant)
        let error = await refreshError { try await rig.client.refreshToken(afterRejectionOf: refreshed.accessToken) }
        #expect(error == .refreshTokenRejected)

        let journal = rig.client.sessionJournal()
        #expect(journal.map(\.kind) == [.sessionRestored, .tokenRefreshed, .signedOut])
        let end = try #require(journal.last)
        #expect(end.reason == .revoked)
        #expect(end.errorClass?.hasPrefix("TokenRefreshError.refreshTokenRejected") == true)
        #expect(end.tokenFingerprint == refreshed.fingerprint)
        #expect(journal[1].tokenFingerprint == refreshed.fingerprint)
        #expect(journal.allSatisfy { $0.time == rig.clock.date })
        #expect(rig.client.exportSessionJournal().split(separator: "\n").count == 3)
    }

    @Test func aFailedWriteAndAnOfflineRefreshAreJournaledWithTheirErrorClass() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(store: store)
        await store.setFailSaves(true)
        _ = try await rig.client.validToken()

        let kinds = rig.client.sessionJournal().map(\.kind)
        #expect(kinds.contains(.persistenceFailed))
        let failure = try #require(rig.client.sessionJournal().first { $0.kind == .persistenceFailed })
        #expect(failure.errorClass?.hasPrefix("TokenRefreshError.storageUnavailable") == true)
    }

    @Test func noSecretReachesTheJournalOrItsExport() async throws {
        let store = FlakyStore()
        let rig = try await Rig.make(server: .init(clientSecret: "journal-client-secret"), store: store)
        var secrets = [rig.initial.accessToken, rig.initial.refreshToken!, "journal-client-secret"]
        await store.setFailSaves(true)
        let refreshed = try await rig.client.validToken()
        secrets += [refreshed.accessToken, refreshed.refreshToken!]
        await store.setFailSaves(false)
        await rig.server.enqueue(.serviceUnavailable(retryAfter: 60))
        _ = await refreshError { try await rig.client.refreshToken(afterRejectionOf: refreshed.accessToken) }
        rig.clock.advance(by: .seconds(61))
        let signedIn = try await rig.client.signIn(
            with: TestSecrets.shared.register(
                AuthToken(
                    accessToken: "journal-signin-access", refreshToken: "journal-signin-refresh",
                    receivedAt: rig.clock.date, lifetime: 3600)))
        secrets += ["journal-signin-access", "journal-signin-refresh"]
        await rig.server.enqueue(.invalidGrant)
        _ = await refreshError { try await rig.client.refreshToken(afterRejectionOf: signedIn.accessToken) }

        let journal = rig.client.sessionJournal()
        #expect(journal.count >= 5)
        var dumped = ""
        dump(journal, to: &dumped)
        let texts = journal.map(\.description) + [rig.client.exportSessionJournal(), dumped, "\(journal)"]
        for text in texts {
            for secret in secrets {
                #expect(
                    !text.contains(secret), "the journal holds a secret (fingerprint \(AuthToken.fingerprint(secret)))")
            }
        }
    }

    @Test func theJournalKeepsOnlyTheNewestEntries() async throws {
        let rig = try await Rig.make(seedSession: false)
        for index in 0..<(SessionJournal.capacity + 10) {
            _ = try await rig.client.signIn(
                with: AuthToken(accessToken: "journal-\(index)", receivedAt: rig.clock.date))
        }
        let journal = rig.client.sessionJournal()
        #expect(journal.count == SessionJournal.capacity)
        #expect(journal.last?.tokenFingerprint == AuthToken.fingerprint("journal-\(SessionJournal.capacity + 9)"))
    }
}

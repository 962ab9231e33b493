import Testing
import TokenKitLogCheck

@testable import TokenRefresh

/// `currentState`'s lock-free cell: readers on other threads only ever see a state that was published.
@Suite(.logLeakCheck()) struct PublishedStateTests {
    static let states: [AuthState] = [
        .signedOut, .signedIn(userID: "user-a"), .expired(lastUserID: "user-a"), .loading, .signedIn(userID: nil),
        .signedIn(userID: "a-user-id-long-enough-to-live-on-the-heap-0001"),
    ]

    @Test func readersOnOtherThreadsSeeOnlyPublishedStatesWhileOnePublisherChangesIt() async {
        let cell = PublishedState(.loading)
        let states = Self.states
        await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    (0..<20_000).allSatisfy { _ in states.contains(cell.state) }
                }
            }
            group.addTask {
                // One publisher, as the client's actor is.
                for index in 0..<20_000 { cell.publish(states[index % states.count]) }
                return true
            }
            for await consistent in group { #expect(consistent) }
        }
        #expect(cell.state == states[19_999 % states.count])
    }

    #if os(Linux) || os(Android)
        @Test func aClientKeepsOneBoxPerDistinctUserStateHoweverOftenItIsPublished() {
            let cell = PublishedState(.loading)
            #expect(cell.boxCount == 0)
            for _ in 0..<100 {
                for state in Self.states { cell.publish(state) }
            }
            // `loading` and `signedOut` are shared by every client; the four user states are this client's.
            #expect(cell.boxCount == 4)
            #expect(cell.state == Self.states.last)
            cell.publish(.signedOut)
            #expect(cell.state == .signedOut)
        }
    #endif

    @Test func aClientsCurrentStateFollowsItsSession() async throws {
        let rig = try await Rig.make(expired: false)
        #expect(rig.client.currentState == .loading)
        await rig.client.restoreSession()
        #expect(rig.client.currentState == .signedIn(userID: "user-1"))
        try await rig.client.signOut()
        #expect(rig.client.currentState == .signedOut)
    }
}

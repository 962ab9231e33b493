import AuthToken
import Foundation
import Testing

@Suite struct TokenRefreshPlaceholderTests {
    @Test func anExpiredTokenNeedsARefresh() {
        let token = AuthToken(accessToken: "a", receivedAt: Date(timeIntervalSince1970: 0), lifetime: 60)
        #expect(token.willExpireSoon(at: Date(timeIntervalSince1970: 61)))
    }
}

import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import Persistence
import Testing
import TokenKitLogCheck
import TokenKitTesting
import TokenRefresh

@Suite(.logLeakCheck()) struct DPoPSessionStoreTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    let base = InMemoryTokenStore()
    let prover = DPoPProver(key: SoftwareDPoPKey(), now: { DPoPSessionStoreTests.now })

    func session(
        _ accessToken: String = "dpop-at-1", type: String = "DPoP", generation: UInt64 = 1,
        dpopKey: DPoPKeyRecord? = nil
    ) -> StoredSession {
        let token = TestSecrets.shared.register(
            AuthToken(
                accessToken: accessToken, refreshToken: "dpop-rt-\(accessToken)", tokenType: type,
                receivedAt: Self.now, lifetime: 3600))
        return StoredSession(token: token, generation: generation, sessionID: "s-1", dpopKey: dpopKey)
    }

    func stored() async -> StoredSession? {
        if case .found(let session) = await base.load(account: "default") { return session }
        return nil
    }

    @Test func aDPoPSessionIsWrittenWithItsKeyAndABearerOneWithout() async throws {
        let store = DPoPSessionStore(base, prover: prover)
        try await store.save(session(), account: "default", condition: .always)
        let record = try #require(await stored()?.dpopKey)
        #expect(record.kind == .software)
        #expect(record.thumbprint == prover.thumbprint)
        #expect("\(record)" == "DPoPKeyRecord(p256, jkt: \(prover.thumbprint))")
        try await store.save(
            session("bearer-at", type: "Bearer", generation: 2), account: "default", condition: .always)
        #expect(await stored()?.dpopKey == nil)
    }

    @Test func anotherProcessRestoresTheKeyWithTheSessionBeforeAnyRequest() async throws {
        try await DPoPSessionStore(base, prover: prover).save(session(), account: "default", condition: .always)
        // The extension's process: its own prover with a key of its own, the same store.
        let other = DPoPProver(key: SoftwareDPoPKey(), now: { Self.now })
        let store = DPoPSessionStore(base, prover: other)
        #expect(await store.restore(account: "default") == .restored(prover.thumbprint))
        #expect(other.thumbprint == prover.thumbprint)
        #expect(store.lastRestore(account: "default") == .restored(prover.thumbprint))
    }

    @Test func aSessionWhoseKeyDidNotComeBackIsReportedAndNeverHandedOut() async throws {
        try await base.save(session(), account: "default", condition: .always)  // written without its key
        let store = DPoPSessionStore(base, prover: prover)
        #expect(await store.restore(account: "default") == .keyLost(.missing))
        guard case .absent = await store.load(account: "default") else {
            Issue.record("a session without its key was handed out")
            return
        }
        #expect(await stored() == nil)  // its refresh token is gone with it
    }

    @Test func aKeyThatIsNotTheTokensIsAMismatch() async throws {
        let other = DPoPProver.thumbprint(of: SoftwareDPoPKey())
        let bound = JWTBuilder.token(claims: #"{"sub":"u","cnf":{"jkt":""# + other + #""}}"#)
        let key = SoftwareDPoPKey()
        let record = DPoPKeyRecord(
            kind: .software, material: key.rawRepresentation, thumbprint: DPoPProver.thumbprint(of: key))
        try await base.save(session(bound, dpopKey: record), account: "default", condition: .always)
        #expect(await DPoPSessionStore(base, prover: prover).restore(account: "default") == .keyLost(.mismatch))
    }

    @Test func unreadableKeyMaterialIsALostKey() async throws {
        let record = DPoPKeyRecord(kind: .software, material: Data([1, 2, 3]), thumbprint: "x")
        try await base.save(session(dpopKey: record), account: "default", condition: .always)
        #expect(await DPoPSessionStore(base, prover: prover).restore(account: "default") == .keyLost(.unreadable))
        let enclave = DPoPKeyRecord(kind: .secureEnclave, material: Data([1, 2, 3]), thumbprint: "x")
        try await base.save(session(dpopKey: enclave), account: "default", condition: .always)
        #expect(await DPoPSessionStore(base, prover: prover).restore(account: "default") == .keyLost(.unreadable))
    }

    @Test func signingOutDeletesTheKeyWithTheSessionAndRotatesIt() async throws {
        let store = DPoPSessionStore(base, prover: prover)
        try await store.save(session(), account: "default", condition: .always)
        let before = prover.thumbprint
        try await store.remove(account: "default", condition: .always)
        #expect(await stored() == nil)
        #expect(prover.thumbprint != before)
        #expect(await store.restore(account: "default") == .noSession)
    }

    @Test func theFileStoreKeepsTheKeyInTheSessionsFile() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = FileTokenStore(directory: directory)
        try await DPoPSessionStore(file, prover: prover).save(session(), account: "default", condition: .always)
        let other = DPoPProver(key: SoftwareDPoPKey())
        #expect(await DPoPSessionStore(file, prover: other).restore(account: "default") == .restored(prover.thumbprint))
    }

    @Test func aRefreshThroughTheDPoPTransportKeepsTheTypeAndTheKeyWithTheSession() async throws {
        let store = DPoPSessionStore(base, prover: prover)
        let expired = TestSecrets.shared.register(
            AuthToken(
                accessToken: "dpop-at-old", refreshToken: "dpop-rt-old", tokenType: "DPoP",
                receivedAt: Self.now.addingTimeInterval(-7200), lifetime: 3600))
        try await store.save(
            StoredSession(token: expired, generation: 1, sessionID: "s-1"), account: "default", condition: .always)
        TestSecrets.shared.register("dpop-at-new", as: .accessToken)
        TestSecrets.shared.register("dpop-rt-new", as: .refreshToken)
        let server = MockTransport(script: [
            .response(
                status: .ok, headers: [.contentType: "application/json"],
                body: Data(
                    #"{"access_token":"dpop-at-new","token_type":"DPoP","expires_in":3600,"refresh_token":"dpop-rt-new"}"#
                        .utf8))
        ])
        let endpoint = TokenEndpoint(
            url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "app"),
            transport: DPoPTransport(server, prover: prover), now: { Self.now })
        let client = TokenRefreshClient(
            strategy: OAuthRefreshStrategy(endpoint: endpoint), store: store, now: { Self.now })
        let token = try await client.validToken()
        #expect(token.tokenType == "DPoP")
        #expect(server.requests.count == 1)
        #expect(server.requests[0].request.headerFields[HTTPField.Name("DPoP")!] != nil)
        let saved = try #require(await stored())
        #expect(saved.token.refreshToken == "dpop-rt-new")
        #expect(saved.dpopKey?.thumbprint == prover.thumbprint)
    }
}

@Suite(.logLeakCheck()) struct DPoPServerTimeTests {
    /// The `iat` of a proof, read without verifying it.
    static func issuedAt(_ proof: String) -> Int? {
        let parts = proof.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        guard let data = Data(base64Encoded: base64),
            let payload = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return nil }
        return payload["iat"] as? Int
    }

    /// A device clock an hour off either way: once one token endpoint answer taught the server clock, proofs are
    /// stamped within Keycloak's limits (15 s ahead, 25 s behind the server's time).
    @Test(arguments: [3600.0, -3600.0])
    func proofsCarryTheServersTimeOnADeviceWhoseClockIsOff(skew: TimeInterval) async throws {
        let serverTime = Date(timeIntervalSince1970: 1_800_000_000)
        let serverClock = ServerClock(deviceNow: { serverTime.addingTimeInterval(skew) })
        let prover = DPoPProver(key: SoftwareDPoPKey(), now: serverClock.wallClock)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let server = MockTransport(script: [
            .response(status: .badRequest, headers: [.date: formatter.string(from: serverTime)])
        ])
        let transport = DPoPTransport(ServerClockTransport(server, clock: serverClock), prover: prover)
        let request = HTTPRequest(method: .post, scheme: "https", authority: "auth.example.com", path: "/token")
        _ = try await transport.send(request, body: nil)
        // The first proof went out before any answer: it carries the device's time.
        let first = try #require(server.requests.first?.request.headerFields[HTTPField.Name("DPoP")!])
        #expect(Self.issuedAt(first) == Int(serverTime.timeIntervalSince1970 + skew))
        let proof = try prover.proof(method: "GET", url: URL(string: "https://api.example.com/v1/me")!)
        let iat = try #require(Self.issuedAt(proof))
        let serverSeconds = Int(serverTime.timeIntervalSince1970)
        #expect(iat - serverSeconds <= 15 && serverSeconds - iat <= 25, "iat off by \(iat - serverSeconds) s")
    }
}

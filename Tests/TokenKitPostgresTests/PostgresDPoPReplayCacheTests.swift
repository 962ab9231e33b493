// Compiled only with the `PostgresStore` package trait.
#if PostgresStore
import AuthToken
import Crypto
import Foundation
import PostgresNIO
import Testing
import TokenKitLogCheck
import TokenKitPostgres
import TokenVerification

/// DPoP proofs for the replay tests: one P-256 key, proofs for one request at a given time.
struct ReplayProofs {
    static let uri = "https://api.example.com/orders"
    let key = P256.Signing.PrivateKey()

    static func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    func proof(iat: Date) -> String {
        let point = key.publicKey.x963Representation.dropFirst()
        let jwk =
            #"{"kty":"EC","crv":"P-256","x":"\#(Self.base64URL(point.prefix(32)))","#
            + #""y":"\#(Self.base64URL(point.suffix(32)))"}"#
        let payload =
            #"{"jti":"\#(UUID().uuidString)","htm":"GET","htu":"\#(Self.uri)","iat":\#(Int(iat.timeIntervalSince1970))}"#
        let input =
            Self.base64URL(Array(#"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(jwk)}"#.utf8)) + "."
            + Self.base64URL(Array(payload.utf8))
        let signature = try! key.signature(for: SHA256.hash(data: Array(input.utf8)))
        let proof = input + "." + Self.base64URL(signature.rawRepresentation)
        TestSecrets.shared.register(proof, as: .accessToken)
        return proof
    }
}

/// A clock whose sleeps end at once: an operation timeout fires as soon as the work has to wait.
private struct InstantTimeoutClock: Clock {
    var now: ContinuousClock.Instant { ContinuousClock.now }
    var minimumResolution: Duration { .zero }
    func sleep(until deadline: ContinuousClock.Instant, tolerance: Duration? = nil) async throws {
        try Task.checkCancellation()
        await Task.yield()
    }
}

@Suite(.logLeakCheck(), .enabled(if: TestDatabase.isConfigured, TestDatabase.skipMessage))
struct PostgresDPoPReplayCacheTests {
    @Test func aProofIsSpentOnceAndMigrateIsIdempotent() async throws {
        try await withReplicas(1) { replicas in
            let cache = PostgresDPoPReplayCache(client: replicas.first, configuration: .init(tableName: replicas.table))
            try await cache.migrate()
            try await cache.migrate()
            let now = Date()
            let expiry = now.addingTimeInterval(65)
            #expect(try await cache.spend(keyThumbprint: "key-a", jwtID: "jti-1", until: expiry, now: now))
            #expect(!(try await cache.spend(keyThumbprint: "key-a", jwtID: "jti-1", until: expiry, now: now)))
            // The same jti under another key is another proof.
            #expect(try await cache.spend(keyThumbprint: "key-b", jwtID: "jti-1", until: expiry, now: now))
        }
    }

    @Test func expiredRowsArePruned() async throws {
        try await withReplicas(1) { replicas in
            let cache = PostgresDPoPReplayCache(
                client: replicas.first, configuration: .init(tableName: replicas.table, pruneInterval: nil))
            let now = Date()
            _ = try await cache.spend(keyThumbprint: "k", jwtID: "old", until: now.addingTimeInterval(-1), now: now)
            _ = try await cache.spend(keyThumbprint: "k", jwtID: "live", until: now.addingTimeInterval(60), now: now)
            #expect(try await cache.prune(now: now) == 1)
            #expect(!(try await cache.spend(keyThumbprint: "k", jwtID: "live", until: now, now: now)))
        }
    }

    /// Four replicas, each with its own pool and cache over one table: a proof accepted by one is refused by the
    /// next, including proofs at both edges of the iat window.
    @Test func aProofReplayedToAnotherReplicaIsRefused() async throws {
        try await withReplicas(4) { replicas in
            // Whole seconds, as a proof's iat is: the window's edges are then exact.
            let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
            let verifiers = replicas.clients.map { client in
                DPoPVerifier(
                    replayCache: PostgresDPoPReplayCache(
                        client: client, configuration: .init(tableName: replicas.table)),
                    now: { now })
            }
            let proofs = ReplayProofs()
            var refused = 0
            let offsets: [TimeInterval] = [-65, 5] + Array(repeating: 0, count: 98)
            for (index, offset) in offsets.enumerated() {
                let proof = proofs.proof(iat: now.addingTimeInterval(offset))
                _ = try await verifiers[index % 4].verify(
                    proof: proof, method: "GET", uri: ReplayProofs.uri, accessToken: nil, boundKeyThumbprint: nil)
                do throws(TokenVerificationError) {
                    _ = try await verifiers[(index + 1) % 4].verify(
                        proof: proof, method: "GET", uri: ReplayProofs.uri, accessToken: nil, boundKeyThumbprint: nil)
                } catch {
                    #expect(error == .dpopProofReplayed)
                    refused += 1
                }
            }
            #expect(refused == offsets.count)
        }
    }

    /// Two replicas spending the same proofs at the same moment: exactly one wins each. The 200 spends queue for
    /// two pools' connections, which on a loaded machine takes longer than the default operation timeout: the test
    /// is about the winners, so its bound is only a guard against a hang.
    @Test func concurrentSpendsOfOneProofHaveOneWinner() async throws {
        try await withReplicas(2) { replicas in
            let caches = replicas.clients.map {
                PostgresDPoPReplayCache(
                    client: $0, configuration: .init(tableName: replicas.table, operationTimeout: .seconds(50)))
            }
            try await caches[0].migrate()
            let now = Date()
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for jti in 0..<100 {
                    for cache in caches {
                        group.addTask {
                            try await cache.spend(
                                keyThumbprint: "k", jwtID: "jti-\(jti)", until: now.addingTimeInterval(60), now: now)
                        }
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(wins == 100)
        }
    }
}

/// Needs no server: a closed port stands for a replay cache that is down.
@Suite(.logLeakCheck()) struct PostgresDPoPReplayCacheUnreachableTests {
    @Test(.timeLimit(.minutes(1))) func anUnreachableCacheFailsTheProofClosed() async throws {
        try await withUnreachableClient { client in
            let cache = PostgresDPoPReplayCache(client: client, clock: InstantTimeoutClock())
            let now = Date()
            let verifier = DPoPVerifier(replayCache: cache, now: { now })
            await #expect(throws: TokenVerificationError.dpopReplayCacheUnavailable) {
                _ = try await verifier.verify(
                    proof: ReplayProofs().proof(iat: now), method: "GET", uri: ReplayProofs.uri, accessToken: nil,
                    boundKeyThumbprint: nil)
            }
        }
    }
}
#endif

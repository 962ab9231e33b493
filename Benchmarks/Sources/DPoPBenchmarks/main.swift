import BenchmarkSupport
import Crypto
import Foundation
import PostgresNIO
import TokenKitPostgres
import TokenVerification
import _CryptoExtras

// DPoP on the resource server, as ratios measured in one run:
// 1. the check of a request (a cached access token plus a fresh ES256 proof, its jti spent in memory) against a bare
//    ES256 verification plus the same replay insert: at most 1.10x;
// 2. with TOKENKIT_POSTGRES_URL (`.ci/postgres --run`): the PostgreSQL replay insert's p99 (at most 1 ms), and four
//    replicas, each with its own pool over one table, every one of 10,000 proofs per replica replayed to the next
//    replica, including proofs at both edges of the iat window: 100% refused.

func base64URL<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

let uri = "https://api.example.com/orders"
let issuer = "https://auth.example.com"

/// A client key, its JWK and thumbprint, and proofs made ahead of time.
struct Client: Sendable {
    let key = P256.Signing.PrivateKey()
    var coordinates: (String, String) {
        let point = key.publicKey.x963Representation.dropFirst()
        return (base64URL(point.prefix(32)), base64URL(point.suffix(32)))
    }
    var jwk: String { #"{"kty":"EC","crv":"P-256","x":"\#(coordinates.0)","y":"\#(coordinates.1)"}"# }
    var thumbprint: String {
        base64URL(
            SHA256.hash(
                data: Array(#"{"crv":"P-256","kty":"EC","x":"\#(coordinates.0)","y":"\#(coordinates.1)"}"#.utf8)))
    }

    /// A proof with its signing input and raw signature, for the bare baseline.
    func proof(iat: Int, token: String?) -> (proof: String, input: [UInt8], signature: [UInt8], jti: String) {
        let jti = UUID().uuidString
        let ath = token.map { #","ath":"\#(base64URL(SHA256.hash(data: Array($0.utf8))))""# } ?? ""
        let payload = #"{"jti":"\#(jti)","htm":"GET","htu":"\#(uri)","iat":\#(iat)\#(ath)}"#
        let input =
            base64URL(Array(#"{"typ":"dpop+jwt","alg":"ES256","jwk":\#(jwk)}"#.utf8)) + "."
            + base64URL(Array(payload.utf8))
        let signature = Array(try! key.signature(for: SHA256.hash(data: Array(input.utf8))).rawRepresentation)
        return (input + "." + base64URL(signature), Array(input.utf8), signature, jti)
    }
}

/// An RS256 access token bound to `jkt`, and the key set that verifies it.
func accessToken(jkt: String, now: Int) throws -> (token: String, keys: JWKSet) {
    let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
    let primitives = try key.publicKey.getKeyPrimitives()
    let jwks =
        #"{"keys":[{"kty":"RSA","alg":"RS256","kid":"k1","n":"\#(base64URL(primitives.modulus))","#
        + #""e":"\#(base64URL(primitives.publicExponent))"}]}"#
    let payload =
        #"{"iss":"\#(issuer)","sub":"user_bench","iat":\#(now),"exp":\#(now + 3600),"cnf":{"jkt":"\#(jkt)"}}"#
    let input =
        base64URL(Array(#"{"alg":"RS256","typ":"at+jwt","kid":"k1"}"#.utf8)) + "." + base64URL(Array(payload.utf8))
    let signature = try key.signature(for: Array(input.utf8), padding: .insecurePKCS1v1_5)
    return (input + "." + base64URL(signature.rawRepresentation), try JWKSet(json: Data(jwks.utf8)))
}

final class Box<T>: @unchecked Sendable {
    // Read and written by one task at a time: the measured loop.
    var value: T
    init(_ value: T) { self.value = value }
}

@concurrent func measureServerCheck() async throws -> Bool {
    let client = Client()
    let nowSeconds = Int(Date().timeIntervalSince1970)
    let now = Date(timeIntervalSince1970: TimeInterval(nowSeconds))
    let (token, keys) = try accessToken(jkt: client.thumbprint, now: nowSeconds)
    let verifier = TokenVerifier(
        configuration: .init(issuer: issuer, audience: .notChecked(reason: "benchmark token")),
        keySource: StaticJWKSSource(keys), now: { now })
    let iterations = 300
    let rounds = 7
    var dpopFigures: [Double] = []
    var bareFigures: [Double] = []
    let publicKey = client.key.publicKey
    let authorization = "DPoP " + token
    for _ in 0..<rounds {
        // Fresh proofs for each measured call (the harness warms up with a tenth more), and fresh caches.
        let count = iterations * 3 + iterations / 10 + 1
        let proofs = (0..<count).map { _ in client.proof(iat: nowSeconds, token: token) }
        let authenticator = DPoPAuthenticator(
            tokens: BearerAuthenticator(verifier: verifier),
            proofs: DPoPVerifier(replayCache: InMemoryDPoPReplayCache(), now: { now }))
        // The access token is in the verified-token cache, as on a busy server.
        _ = try await verifier.verify(token)
        let next = Box(0)
        let dpop = try await Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            let proof = proofs[next.value].proof
            next.value += 1
            guard
                case .authenticated = await authenticator.authenticate(
                    authorization: authorization, proofs: [proof], method: "GET", uri: uri)
            else { throw Refused() }
        }
        let cache = InMemoryDPoPReplayCache()
        let thumbprint = client.thumbprint
        let expiry = now.addingTimeInterval(65)
        let bareNext = Box(0)
        let bare = try Harness.nanosecondsPerOperation(samples: 3, iterations: iterations) {
            let proof = proofs[bareNext.value]
            bareNext.value += 1
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: proof.signature)
            guard publicKey.isValidSignature(signature, for: SHA256.hash(data: proof.input)),
                try cache.spend(keyThumbprint: thumbprint, jwtID: proof.jti, until: expiry, now: now)
            else { throw Refused() }
        }
        dpopFigures.append(dpop)
        bareFigures.append(bare)
    }
    let dpop = Harness.median(dpopFigures)
    let bare = Harness.median(bareFigures)
    let ratio = dpop / bare
    return Harness.report(
        "DPoP server check (cached access token + fresh ES256 proof + in-memory replay insert)",
        "\(Harness.format(dpop)) vs bare ES256 verify + insert \(Harness.format(bare)): \(String(format: "%.2fx", ratio))",
        target: "<= 1.10x", passed: ratio <= 1.10)
}

struct Refused: Error {}

@concurrent func measurePostgres(_ configuration: PostgresClient.Configuration) async throws -> Bool {
    let table = "tokenkit_bench_dpop_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    let clients = (0..<4).map { _ in PostgresClient(configuration: configuration) }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        for client in clients { group.addTask { await client.run() } }
        defer { group.cancelAll() }
        let caches = clients.map { PostgresDPoPReplayCache(client: $0, configuration: .init(tableName: table)) }
        try await caches[0].migrate()

        // 1. The replay insert's latency, one insert after another on one pool.
        let now = Date()
        for index in 0..<500 {  // warm-up: connections made, plans cached
            _ = try await caches[0].spend(
                keyThumbprint: "warm", jwtID: "\(index)", until: now.addingTimeInterval(65), now: now)
        }
        var latencies: [Double] = []
        latencies.reserveCapacity(10_000)
        for index in 0..<10_000 {
            let start = DispatchTime.now().uptimeNanoseconds
            _ = try await caches[0].spend(
                keyThumbprint: "bench", jwtID: "\(index)", until: now.addingTimeInterval(65), now: now)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - start))
        }
        latencies.sort()
        let p50 = latencies[latencies.count / 2]
        let p99 = latencies[latencies.count * 99 / 100]
        let fast = Harness.report(
            "PostgreSQL replay insert (INSERT ... ON CONFLICT DO NOTHING), 10,000 in a row",
            "p50 \(Harness.format(p50)), p99 \(Harness.format(p99))", target: "p99 <= 1 ms", passed: p99 <= 1_000_000)

        // 2. Four replicas; each accepts its 10,000 proofs and the next replica gets every one of them again.
        let nowSeconds = Int(Date().timeIntervalSince1970)
        let fixed = Date(timeIntervalSince1970: TimeInterval(nowSeconds))
        let verifiers = caches.map { DPoPVerifier(replayCache: $0, now: { fixed }) }
        let perReplica = 10_000
        let started = DispatchTime.now().uptimeNanoseconds
        let refused = try await withThrowingTaskGroup(of: (accepted: Int, refused: Int).self) { replicas in
            for replica in 0..<4 {
                replicas.addTask {
                    let client = Client()
                    var accepted = 0
                    var refused = 0
                    for index in 0..<perReplica {
                        // Proofs at both edges of the window too: 65 s old and 5 s ahead.
                        let offset = index % 100 == 0 ? -65 : index % 100 == 1 ? 5 : 0
                        let proof = client.proof(iat: nowSeconds + offset, token: nil).proof
                        do {
                            _ = try await verifiers[replica].verify(
                                proof: proof, method: "GET", uri: uri, accessToken: nil, boundKeyThumbprint: nil)
                            accepted += 1
                        } catch {}
                        do throws(TokenVerificationError) {
                            _ = try await verifiers[(replica + 1) % 4].verify(
                                proof: proof, method: "GET", uri: uri, accessToken: nil, boundKeyThumbprint: nil)
                        } catch {
                            if error == .dpopProofReplayed { refused += 1 }
                        }
                    }
                    return (accepted, refused)
                }
            }
            var totals = (accepted: 0, refused: 0)
            for try await result in replicas {
                totals.accepted += result.accepted
                totals.refused += result.refused
            }
            return totals
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        let total = 4 * perReplica
        let replayed = Harness.report(
            "Four replicas over one PostgreSQL table, 10,000 proofs each replayed to another replica",
            "\(refused.accepted) of \(total) accepted first, \(refused.refused) of \(total) replays refused "
                + String(format: "(%.1f s)", seconds),
            target: "100% refused", passed: refused.accepted == total && refused.refused == total)
        try await clients[0].query("DROP TABLE IF EXISTS \(unescaped: table)")
        return fast && replayed
    }
}

var passed = try await measureServerCheck()
if let url = ProcessInfo.processInfo.environment["TOKENKIT_POSTGRES_URL"], !url.isEmpty {
    guard let configuration = PostgresTokenStore.loopbackClientConfiguration(url: url) else {
        print("DPoPBenchmarks: TOKENKIT_POSTGRES_URL must look like postgres://USER[:PASSWORD]@HOST:PORT/DATABASE")
        exit(2)
    }
    passed = try await measurePostgres(configuration) && passed
} else {
    print("DPoPBenchmarks: PostgreSQL figures skipped (set TOKENKIT_POSTGRES_URL, as .ci/postgres --run does)")
}
if !passed { print("DPoPBenchmarks: at least one target missed (see MISS lines)") }
exit(passed ? 0 : 1)

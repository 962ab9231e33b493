// A DPoP proof on the request path against a bare P-256 signature of an input of the same length: the proof's own
// work (the cached header, the payload, a random `jti`, the cached `ath`, base64url) must stay within 1.25x. Then the
// nonce round trips through AuthenticatedClient, counted: at most one extra request per nonce rotation per origin,
// and none when the servers hand out their next nonce on 200s.
// Run: swift run -c release --package-path Benchmarks DPoPProofBenchmarks
//
// Synchronous on purpose (no actors, no tasks): `Benchmarks/callgrind dpop` runs it under valgrind, which could not
// run a benchmark that uses libdispatch.
import AuthToken
import BenchmarkSupport
import Crypto
import Foundation
import HTTPTypes
import NetworkRetry

/// Consumes a value so the optimizer cannot drop the work that produced it.
@inline(never) func blackHole<T>(_ value: T) { withExtendedLifetime(value) {} }

let key = SoftwareDPoPKey()
let prover = DPoPProver(key: key)
let request = HTTPRequest(method: .get, scheme: "https", authority: "api.example.com", path: "/v1/items?page=2")
let accessToken = String(repeating: "a", count: 800)
// A signing input as long as a proof's, signed with the same kind of key: the floor a proof cannot go below.
let sample = try prover.proof(for: request, accessToken: accessToken)
let signingInput = Data(sample.split(separator: ".").prefix(2).joined(separator: ".").utf8)
let bareKey = P256.Signing.PrivateKey()

@inline(never) func proof() -> String { try! prover.proof(for: request, accessToken: accessToken) }
@inline(never) func bareSign() -> Data { try! bareKey.signature(for: signingInput).rawRepresentation }

// `--loop <proof|sign|none> <count>`: only that operation, `count` times, for an instruction count under
// `valgrind --tool=callgrind` (`Benchmarks/callgrind dpop`).
/// Called right before the measured loop: `Benchmarks/callgrind dpop` counts from here, so key generation (whose cost
/// varies from run to run) stays out of the count.
@inline(never) func callgrindMark() { blackHole(0) }

let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--loop", let count = Int(arguments[3]) {
    callgrindMark()
    for _ in 0..<count {
        switch arguments[2] {
        case "proof": blackHole(proof())
        case "sign": blackHole(bareSign())
        default: blackHole(count)
        }
    }
    exit(0)
}

// Alternating rounds, so load that comes and goes hits both sides alike.
var proofs: [Double] = []
var signs: [Double] = []
for _ in 0..<7 {
    signs.append(Harness.nanosecondsPerOperation(samples: 5, iterations: 2_000) { blackHole(bareSign()) })
    proofs.append(Harness.nanosecondsPerOperation(samples: 5, iterations: 2_000) { blackHole(proof()) })
}
let ratio = Harness.median(zip(proofs, signs).map { $0 / $1 })
var passed = Harness.report(
    "DPoP proof on the request path vs a bare P-256 sign, in time",
    "\(Harness.format(Harness.median(proofs))) vs \(Harness.format(Harness.median(signs))) = "
        + String(format: "%.2fx", ratio), target: "<= 1.25x", passed: ratio <= 1.25)

/// Two resource servers that each rotate their nonce every `period` requests and accept only the current one.
/// `announces`: the new nonce comes on the 200 that rotates it (steady state); otherwise only on a 401 challenge.
final class RotatingServers: HTTPTransport, @unchecked Sendable {
    // `state` is only touched while holding `lock`.
    private let lock = NSLock()
    private var state: [String: (nonce: Int, served: Int)] = [:]
    private(set) var sends = 0
    private(set) var rotations = 0
    let period: Int
    let announces: Bool

    init(period: Int, announces: Bool) {
        self.period = period
        self.announces = announces
    }

    func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        (answer(request), Data())
    }

    private func answer(_ request: HTTPRequest) -> HTTPResponse {
        let proof = request.headerFields[HTTPField.Name("DPoP")!] ?? ""
        let payload = proof.split(separator: ".").dropFirst().first.map(String.init) ?? ""
        lock.lock()
        defer { lock.unlock() }
        sends += 1
        let origin = request.authority ?? ""
        var entry = state[origin] ?? (nonce: 0, served: 0)
        var fields = HTTPFields()
        let expected = "n-\(entry.nonce)"
        // The nonce claim is base64url inside the payload: compare decoded.
        var base64 = payload.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64 += "=" }
        let claims = Data(base64Encoded: base64).flatMap { try? JSONSerialization.jsonObject(with: $0) }
        guard (claims as? [String: Any])?["nonce"] as? String == expected else {
            fields[HTTPField.Name("DPoP-Nonce")!] = expected
            fields[.wwwAuthenticate] = #"DPoP error="use_dpop_nonce""#
            state[origin] = entry
            return HTTPResponse(status: .unauthorized, headerFields: fields)
        }
        entry.served += 1
        if entry.served % period == 0 {
            entry.nonce += 1
            rotations += 1
            if announces { fields[HTTPField.Name("DPoP-Nonce")!] = "n-\(entry.nonce)" }
        }
        state[origin] = entry
        return HTTPResponse(status: .ok, headerFields: fields)
    }
}

struct FixedDPoPToken: TokenProvider {
    let token = AuthToken(
        accessToken: String(repeating: "t", count: 64), tokenType: "DPoP", receivedAt: Date(), lifetime: 86_400)
    func validToken() async throws -> AuthToken { token }
    func refreshToken(afterRejectionOf accessToken: String) async throws -> AuthToken { token }
}

for announces in [true, false] {
    let servers = RotatingServers(period: 50, announces: announces)
    let client = AuthenticatedClient(
        transport: servers, tokenProvider: FixedDPoPToken(),
        configuration: .init(
            allowedOrigins: ["https://a.example.com", "https://b.example.com"].compactMap(HTTPOrigin.init(string:)),
            dpop: DPoPProver(key: SoftwareDPoPKey())))
    let calls = 1_000
    for index in 0..<calls {
        let authority = index.isMultiple(of: 2) ? "a.example.com" : "b.example.com"
        _ = try await client.executeWithAutoRetry(
            HTTPRequest(method: .get, scheme: "https", authority: authority, path: "/v1/items"))
    }
    let extra = servers.sends - calls
    // The first request to each origin learns its first nonce: 2 extra requests no rotation caused.
    let rotationExtra = extra - 2
    if announces {
        passed =
            Harness.report(
                "DPoP nonce round trips in steady state (DPoP-Nonce on 200s), 2 origins",
                "\(rotationExtra) extra requests over \(calls) calls and \(servers.rotations) rotations",
                target: "0", passed: rotationExtra == 0) && passed
    } else {
        passed =
            Harness.report(
                "DPoP nonce round trips per rotation (new nonce only on a challenge), 2 origins",
                "\(rotationExtra) extra requests for \(servers.rotations) rotations", target: "<= 1 per rotation",
                passed: rotationExtra <= servers.rotations) && passed
    }
}
exit(passed ? 0 : 1)

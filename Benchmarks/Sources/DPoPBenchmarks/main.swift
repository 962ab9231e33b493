// A DPoP proof on the request path against a bare P-256 signature of an input of the same length: the proof's own
// work (the cached header, the payload, a random `jti`, the cached `ath`, base64url) must stay within 1.25x.
// Run: swift run -c release --package-path Benchmarks DPoPBenchmarks
//
// Synchronous on purpose (no actors, no tasks): `Benchmarks/callgrind dpop` runs it under valgrind, which could not
// run a benchmark that uses libdispatch.
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
let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--loop", let count = Int(arguments[3]) {
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
let passed = Harness.report(
    "DPoP proof on the request path vs a bare P-256 sign, in time",
    "\(Harness.format(Harness.median(proofs))) vs \(Harness.format(Harness.median(signs))) = "
        + String(format: "%.2fx", ratio), target: "<= 1.25x", passed: ratio <= 1.25)
exit(passed ? 0 : 1)

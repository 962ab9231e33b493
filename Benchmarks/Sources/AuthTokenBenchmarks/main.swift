// Claim parsing: TokenKit's JWT(parsing:) against vapor/jwt-kit's unverified decode of the same ~800-byte
// RS256 token, in one run. Target: TokenKit at least 10x faster, in time and in
// instructions (see --loop).
import AuthToken
import BenchmarkSupport
import Foundation
import JWTKit

func base64URL(_ bytes: [UInt8]) -> String {
    Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
        .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
}

// A realistic OIDC-style access token: 3 header parameters, 12 claims, a 2048-bit RSA signature's length.
let header = #"{"alg":"RS256","typ":"JWT","kid":"tokenkit-bench-key-2026-11"}"#
let payload = #"""
    {"iss":"https://auth.example.com/","sub":"auth0|5f7c8ec7c33c6c004bbafe82","aud":["https://api.example.com",\#
    "https://example.eu.auth0.com/userinfo"],"iat":1763700000,"exp":1763703600,"nbf":1763700000,\#
    "jti":"8f14e45f-ceea-467a-9575-6b3c2c8f1a2d","scope":"openid profile email","email":"ada@example.com"}
    """#
var generator = SystemRandomNumberGenerator()
let signature = (0..<256).map { _ in UInt8.random(in: 0...255, using: &generator) }
let token = "\(base64URL(Array(header.utf8))).\(base64URL(Array(payload.utf8))).\(base64URL(signature))"

struct BenchPayload: JWTPayload {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var iat: IssuedAtClaim
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim
    var jti: IDClaim
    var scope: String
    var email: String
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

// Both sides must read the same facts, or the comparison means nothing.
let ours = try JWT(parsing: token)
let theirs = try DefaultJWTParser().parse(Array(token.utf8), as: BenchPayload.self).payload
precondition(ours.claims.subject == theirs.sub.value && ours.claims.expiration == theirs.exp.value)
precondition(ours.claims.audience == theirs.aud.value)

var sink = 0

// Each side parses and then reads the same claim (`jti`), as a `String`. jwt-kit decodes every claim into the payload
// type as it parses; TokenKit parses each claim when it is read, so `members` (every claim as a dictionary) is
// measured on its own line, not as part of the parse.
//
// `--loop <tokenkit|tokenkit-members|jwtkit|none> <count>` runs one parser `count` times and nothing else, for an
// instruction count under `valgrind --tool=callgrind` (a loaded machine blurs time, not instructions): subtract the
// `none` run.
let arguments = CommandLine.arguments
if arguments.count == 4, arguments[1] == "--loop", let count = Int(arguments[3]) {
    let parser = DefaultJWTParser()
    let utf8 = Array(token.utf8)
    for _ in 0..<count {
        switch arguments[2] {
        case "tokenkit": sink &+= try JWT(parsing: token).claims.jwtID?.count ?? 0
        case "tokenkit-members": sink &+= try JWT(parsing: token).claims.members.count
        case "jwtkit": sink &+= try parser.parse(utf8, as: BenchPayload.self).payload.jti.value.count
        default: sink &+= utf8.count
        }
    }
    print(sink == 42 ? "" : "\(arguments[2]) x \(count)")
    exit(0)
}

let iterations = 20_000
let tokenKit = try Harness.nanosecondsPerOperation(iterations: iterations) {
    let jwt = try JWT(parsing: token)
    sink &+= jwt.claims.jwtID?.count ?? 0
}
let withMembers = try Harness.nanosecondsPerOperation(iterations: iterations) {
    let jwt = try JWT(parsing: token)
    sink &+= jwt.claims.members.count
}
let withExpiry = Harness.nanosecondsPerOperation(iterations: iterations) {
    let parsed = AuthToken.withParsedExpiration(
        accessToken: token, refreshToken: nil, receivedAt: Date(timeIntervalSince1970: 0))
    sink &+= parsed.lifetime == nil ? 0 : 1
}
let parser = DefaultJWTParser()
let utf8 = Array(token.utf8)
let jwtKit = try Harness.nanosecondsPerOperation(iterations: iterations) {
    let decoded = try parser.parse(utf8, as: BenchPayload.self)
    sink &+= decoded.payload.jti.value.count
}
let jwtKitFromString = try Harness.nanosecondsPerOperation(iterations: iterations) {
    let decoded = try parser.parse(Array(token.utf8), as: BenchPayload.self)
    sink &+= decoded.payload.jti.value.count
}
let foundation = try Harness.nanosecondsPerOperation(iterations: iterations) {
    // A Foundation-only baseline: split, base64-decode, JSONSerialization.
    let parts = token.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    var text = String(decoding: parts[1], as: UTF8.self)
    text += String(repeating: "=", count: (4 - text.utf8.count % 4) % 4)
    text = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    let object = try JSONSerialization.jsonObject(with: Data(base64Encoded: text)!) as! [String: Any]
    sink &+= object.count
}

print("token: \(token.utf8.count) bytes, RS256-shaped, \(ours.claims.members.count) claims")
print("TokenKit JWT(parsing:), then jti         \(Harness.format(tokenKit))")
print("TokenKit JWT(parsing:), then members     \(Harness.format(withMembers))")
print("TokenKit withParsedExpiration            \(Harness.format(withExpiry))")
print("jwt-kit DefaultJWTParser.parse ([UInt8]) \(Harness.format(jwtKit))")
print("jwt-kit from String (utf8 copy)          \(Harness.format(jwtKitFromString))")
print("Foundation split+base64+JSONSerialization \(Harness.format(foundation))")
let ratio = jwtKit / tokenKit
Harness.report(
    "claim parsing vs jwt-kit unverified decode", String(format: "%.1fx faster", ratio), target: ">= 10x",
    passed: ratio >= 10)
if sink == 42 { print("") }

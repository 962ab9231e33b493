// libFuzzer entry point for the verifier's token reading and checks. Built by Fuzz/run together with AuthToken's
// JSONValue and the crypto-free TokenVerification sources (JOSE/, the rules, the algorithms, the error and the
// claims), so everything the verifier decides before it looks a key up is covered.
import Foundation

private let rules = TokenRules(
    issuer: "https://clerk.example.com", audiences: ["api"], algorithms: Set(JWSAlgorithm.all), leeway: .seconds(5),
    maximumTokenAge: .seconds(3_600), requiredClaims: ["exp"], requiredType: "at+jwt",
    allowedParties: ["https://app.example.com"], hmacConfigured: true)

private let lenientRules = TokenRules(
    issuer: "https://clerk.example.com", audiences: nil, algorithms: [.rs256], leeway: .zero, maximumTokenAge: nil,
    requiredClaims: [], requiredType: nil, allowedParties: nil, hmacConfigured: false)

/// Reads one input as a token, as base64url and as JSON; libFuzzer calls it for each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzVerifier(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // The token path: split and decode, then every check that runs before a key lookup. Errors must be safe
    // to show: a fixed description and a challenge without the input.
    do throws(TokenVerificationError) {
        let jws = try CompactJWS(bytes)
        precondition(jws.signingInputCount < bytes.count, "the signing input is a proper prefix")
        for rules in [rules, lenientRules] {
            do throws(TokenVerificationError) {
                let (algorithm, keyID) = try rules.checkHeader(jws.header)
                precondition(rules.algorithms.contains(algorithm), "an accepted alg is allowed")
                precondition(algorithm.name.lowercased() != "none", "none is never accepted")
                if let keyID { precondition(KeyID.isValid(keyID), "an accepted kid is safe") }
                precondition(jws.header["jku"] == nil && jws.header["crit"] == nil, "refused headers")
                try rules.checkClaims(jws.claims, now: Date(timeIntervalSince1970: 1_800_000_000))
                let claims = VerifiedClaims(
                    members: jws.claims, payload: jws.payload, algorithm: algorithm, keyID: keyID)
                precondition(claims.issuer == rules.issuer, "iss matched exactly")
                _ = claims.description
                _ = claims.audience
                _ = claims.expiration
            } catch {
                check(error)
            }
        }
    } catch {
        check(error)
    }

    // Base64url is canonical: what decodes re-encodes to the same text, and what is encoded decodes back.
    if let decoded = Base64URL.decode(bytes) {
        precondition(Array(Base64URL.encode(decoded).utf8) == bytes, "canonical base64url")
    }
    precondition(Base64URL.decode(Array(Base64URL.encode(bytes).utf8)) == bytes, "base64url round trip")

    // The strict JSON parser never traps on any input, nor nests past its bound.
    _ = bytes.withUnsafeBufferPointer { try? JSONParser.parse($0, rejectingDuplicateNames: true) }
    return 0
}

private func check(_ error: TokenVerificationError) {
    let challenge = error.wwwAuthenticate ?? ""
    precondition(!challenge.contains("\\") && challenge.filter { $0 == "\"" }.count % 2 == 0, "a quoted challenge")
    precondition(error.description.hasPrefix("TokenVerificationError."), "a fixed description")
}

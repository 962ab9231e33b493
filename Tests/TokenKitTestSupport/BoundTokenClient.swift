public import Foundation
import HTTPTypes
public import NetworkRetry
import TokenKitLogCheck

/// A DPoP client for the server adapters' tests: TokenKit's own ``DPoPProver`` with a new software key, and an access
/// token of an issuer bound to that key. Every proof it makes is registered with the log leak check.
public struct BoundTokenClient: Sendable {
    /// The origin the client sends its requests to (scheme and authority), for `htu`.
    public let origin: String
    /// The prover, with the server nonces it has learned.
    public let prover: DPoPProver

    /// The access token, bound to the prover's key.
    public let token: String

    /// A client of `origin`, such as `https://api.example.com`, with a token of `issuer` for `subject`, whose
    /// proofs carry the `iat` of `now` (give the server's verifier the same clock: a proof is then never judged old
    /// however slowly a loaded machine runs the test).
    public init(
        origin: String, issuer: TestTokenIssuer, subject: String, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.origin = origin
        self.prover = DPoPProver(key: SoftwareDPoPKey(), now: now)
        self.token = issuer.accessToken(subject: subject, boundTo: prover.thumbprint)
    }

    /// A fresh proof for `method` on `path` of the origin, with `token`'s hash and the nonce learned last, if any.
    public func proof(method: String = "GET", path: String = "/orders", token: String? = nil) throws -> String {
        let token = token ?? self.token
        let proof = try prover.proof(method: method, url: URL(string: origin + path)!, accessToken: token)
        TestSecrets.shared.register(proof, as: .accessToken)
        return proof
    }

    /// Takes `nonce`, from the server's `DPoP-Nonce` field, for the next proofs; `false` when it is refused.
    @discardableResult
    public func learn(nonce: String) -> Bool {
        var fields = HTTPFields()
        fields[HTTPField.Name("DPoP-Nonce")!] = nonce
        return prover.learnNonce(
            from: HTTPResponse(status: .unauthorized, headerFields: fields), origin: HTTPOrigin(string: origin)!)
    }
}

public import Foundation
public import HTTPTypes

/// A transport that adds a DPoP proof to every request it sends: the transport of a token endpoint whose tokens are
/// bound to a key (RFC 9449 section 5).
///
/// Wrap the token endpoint's transport in it, and every grant sent there (refresh, authorization code, device code,
/// client credentials) carries a proof, so the server binds the tokens it issues to the prover's key. It learns the
/// `DPoP-Nonce` of every answer, and when the server answers `use_dpop_nonce` it sends the request again once, with
/// a new proof carrying the nonce; never more than once.
///
/// ```swift
/// let prover = DPoPProver(key: SoftwareDPoPKey())
/// let endpoint = TokenEndpoint(
///     url: URL(string: "https://auth.example.com/oauth/token")!, client: OAuthClient(id: "my-app"),
///     transport: DPoPTransport(URLSessionTransport(), prover: prover))
/// ```
public struct DPoPTransport: HTTPTransport {
    /// The transport that sends the requests.
    package let base: any HTTPTransport
    /// The prover that signs the proofs and keeps the nonces.
    package let prover: DPoPProver

    /// Creates a transport that sends through `base` with proofs from `prover`.
    ///
    /// - Parameters:
    ///   - base: The transport that sends the requests.
    ///   - prover: The session's prover.
    public init(_ base: any HTTPTransport, prover: DPoPProver) {
        self.base = base
        self.prover = prover
    }

    /// Sends `request` with a proof; once more with a fresh proof when the server asks for a nonce.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute URL.
    ///   - body: Its body.
    /// - Returns: The answer.
    /// - Throws: ``NetworkRetryError/invalidRequest`` for a request without an `http(s)` origin; what the wrapped
    ///   transport throws.
    public func send(_ request: HTTPRequest, body: Data?) async throws -> (HTTPResponse, Data) {
        guard let origin = HTTPOrigin(request) else { throw NetworkRetryError.invalidRequest }
        var outgoing = request
        outgoing.headerFields[.dpop] = try prover.proof(for: request, accessToken: nil)
        let (response, data) = try await base.send(outgoing, body: body)
        let learned = prover.learnNonce(from: response, origin: origin)
        guard learned, Self.asksForNonce(response, body: data) else { return (response, data) }
        outgoing.headerFields[.dpop] = try prover.proof(for: request, accessToken: nil)
        let (retried, retriedData) = try await base.send(outgoing, body: body)
        prover.learnNonce(from: retried, origin: origin)
        return (retried, retriedData)
    }

    /// Whether a token endpoint answer is `use_dpop_nonce` (RFC 9449 section 8: a 400 with that OAuth error; some
    /// servers answer 401 with a `DPoP` challenge instead).
    static func asksForNonce(_ response: HTTPResponse, body: Data) -> Bool {
        let code = response.status.code
        guard code == 400 || code == 401 else { return false }
        for value in response.headerFields[values: .wwwAuthenticate] {
            for challenge in AuthenticationChallenge.parse(value) ?? []
            where challenge.isScheme("DPoP") && challenge[parameter: "error"] == "use_dpop_nonce" {
                return true
            }
        }
        guard body.count <= 64 * 1024,
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        else { return false }
        return object["error"] as? String == "use_dpop_nonce"
    }
}

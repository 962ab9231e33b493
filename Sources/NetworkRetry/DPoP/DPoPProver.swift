public import AuthToken
package import Crypto
public import Foundation
public import HTTPTypes

/// Mints DPoP proofs (RFC 9449) with one session's key, and keeps the nonces each server asked for.
///
/// One prover per account: give it to ``DPoPTransport`` (token requests) and to
/// ``AuthenticatedClient/Configuration/dpop`` (API requests). It computes the key's `jwk` header, its thumbprint and
/// the encoded header once per key; a proof then costs a random `jti`, a short JSON payload and one signature. A
/// session store that keeps the key with the session (`DPoPSessionStore`) swaps the key when a session is restored
/// and after a sign-out.
///
/// ```swift
/// let prover = DPoPProver(key: SoftwareDPoPKey(), now: serverClock.wallClock)
/// let proof = try prover.proof(method: "GET", url: URL(string: "https://api.example.com/v1/me")!, accessToken: token)
/// ```
///
/// - `iat` comes from `now`: pass a server clock's `wallClock`, so that a device clock that is off does not make
///   proofs look old or from the future;
/// - `htu` is the request's URL without query and fragment, normalised (RFC 9449 section 4.3);
/// - the nonce for the request's origin is included once a server asked for one (`DPoP-Nonce`, on any answer).
///
/// It is safe to share between tasks: the nonces are kept behind a lock.
public final class DPoPProver: Sendable, CustomStringConvertible {
    /// The wall clock for `iat`.
    package let now: @Sendable () -> Date
    /// The key and what is derived from it, the nonces servers asked for (by origin), and small caches.
    private let state: LockedValue<State>

    /// A key with its thumbprint and encoded header, computed once.
    private final class SigningKey: Sendable {
        let key: any DPoPKey
        let thumbprint: String
        /// `base64url(header) + "."`.
        let encodedHeader: [UInt8]

        init(_ key: any DPoPKey) {
            self.key = key
            let jwk = DPoPProver.publicJWK(key.publicKey)
            thumbprint = DPoPProver.thumbprint(x: jwk.x, y: jwk.y)
            let header =
                #"{"typ":"dpop+jwt","alg":"ES256","jwk":{"kty":"EC","crv":"P-256","x":""#
                + jwk.x + #"","y":""# + jwk.y + #""}}"#
            encodedHeader = DPoPBase64URL.encode(Array(header.utf8)) + [UInt8(ascii: ".")]
        }
    }

    private struct State {
        var signing: SigningKey
        var nonces: [HTTPOrigin: String] = [:]
        var lastAth: (accessToken: String, ath: String)?
        var checkedToken: String?
        var authorization: (accessToken: String, field: HTTPField)?
    }

    /// The most nonces kept (one per origin); past it, the oldest are forgotten.
    static let maximumOrigins = 64

    /// Creates a prover for `key`.
    ///
    /// - Parameters:
    ///   - key: The session's DPoP key.
    ///   - now: The wall clock for `iat`; a `ServerClock`'s `wallClock` keeps it close to the server's time.
    public init(key: any DPoPKey, now: @escaping @Sendable () -> Date = AuthToken.systemNow) {
        self.now = now
        state = LockedValue(State(signing: SigningKey(key)))
    }

    /// The key that signs now.
    public var key: any DPoPKey { state.withLock { $0.signing.key } }

    /// The key's JWK SHA-256 thumbprint (RFC 7638), base64url: the `jkt` a token bound to it carries.
    public var thumbprint: String { state.withLock { $0.signing.thumbprint } }

    /// Signs with `key` from now on (a restored session's key, or a fresh one after a sign-out). The nonces are
    /// kept: they belong to the servers, not to the key.
    ///
    /// - Parameter key: The key.
    package func use(_ key: any DPoPKey) {
        let signing = SigningKey(key)
        state.withLock { state in
            state.signing = signing
            state.checkedToken = nil
            state.lastAth = nil
            state.authorization = nil
        }
    }

    /// The key's public JWK members `x` and `y`, base64url.
    package static func publicJWK(_ key: P256.Signing.PublicKey) -> (x: String, y: String) {
        let raw = Array(key.rawRepresentation)  // x || y, 32 bytes each
        return (
            String(decoding: DPoPBase64URL.encode(raw[0..<32]), as: UTF8.self),
            String(decoding: DPoPBase64URL.encode(raw[32..<64]), as: UTF8.self)
        )
    }

    /// The RFC 7638 thumbprint of a P-256 public key given by its `x` and `y`.
    package static func thumbprint(x: String, y: String) -> String {
        let canonical = #"{"crv":"P-256","kty":"EC","x":""# + x + #"","y":""# + y + #""}"#
        return String(decoding: DPoPBase64URL.encode(Array(SHA256.hash(data: Data(canonical.utf8)))), as: UTF8.self)
    }

    /// The thumbprint of `key`.
    ///
    /// - Parameter key: A DPoP key.
    /// - Returns: Its JWK SHA-256 thumbprint, base64url.
    public static func thumbprint(of key: any DPoPKey) -> String {
        let jwk = publicJWK(key.publicKey)
        return thumbprint(x: jwk.x, y: jwk.y)
    }

    /// A proof for a request.
    ///
    /// - Parameters:
    ///   - method: The HTTP method (`htm`).
    ///   - url: The request's absolute URL; its query and fragment are left out of `htu`.
    ///   - accessToken: The access token the request presents (for `ath`); `nil` on token requests.
    /// - Returns: The proof, a compact JWS for the `DPoP` header field.
    /// - Throws: ``NetworkRetryError/invalidRequest`` for a URL that is not absolute `http(s)`; the key's error when
    ///   it cannot sign.
    public func proof(method: String, url: URL, accessToken: String? = nil) throws -> String {
        guard let origin = HTTPOrigin(url) else { throw NetworkRetryError.invalidRequest }
        let path = url.path(percentEncoded: true)
        return try proof(method: method, origin: origin, path: path, accessToken: accessToken)
    }

    /// A proof for `request`: its method, and its scheme, authority and path as `htu`.
    ///
    /// - Parameters:
    ///   - request: The request, with an absolute `http(s)` URL.
    ///   - accessToken: The access token the request presents (for `ath`); `nil` on token requests.
    /// - Returns: The proof, for the `DPoP` header field.
    /// - Throws: ``NetworkRetryError/invalidRequest`` for a request without an `http(s)` origin; the key's error
    ///   when it cannot sign.
    public func proof(for request: HTTPRequest, accessToken: String?) throws -> String {
        guard let origin = HTTPOrigin(request) else { throw NetworkRetryError.invalidRequest }
        return try proof(
            method: request.method.rawValue, origin: origin, path: request.path ?? "/",
            accessToken: accessToken)
    }

    /// A proof for `method` on `origin` and `path` (a request target; its query is left out).
    package func proof(method: String, origin: HTTPOrigin, path: String, accessToken: String?) throws -> String {
        let htu = Self.htu(origin: origin, path: path)
        let iat = Int64(now().timeIntervalSince1970.rounded(.down))
        let (signing, nonce, ath) = state.withLock { state -> (SigningKey, String?, String?) in
            var ath: String?
            if let accessToken {
                if let last = state.lastAth, last.accessToken == accessToken {
                    ath = last.ath
                } else {
                    let computed = Self.ath(accessToken)
                    state.lastAth = (accessToken, computed)
                    ath = computed
                }
            }
            return (state.signing, state.nonces[origin], ath)
        }
        var payload = #"{"htm":""#
        payload += Self.jsonEscaped(method)
        payload += #"","htu":""#
        payload += Self.jsonEscaped(htu)
        payload += #"","iat":"#
        payload += String(iat)
        payload += #","jti":""#
        payload += Self.newJTI()
        payload += "\""
        if let ath { payload += #","ath":""# + ath + "\"" }
        if let nonce { payload += #","nonce":""# + Self.jsonEscaped(nonce) + "\"" }
        payload += "}"
        var signingInput = signing.encodedHeader
        signingInput.reserveCapacity(signingInput.count + payload.utf8.count * 4 / 3 + 92)
        DPoPBase64URL.append(payload.utf8, to: &signingInput)
        let signature = try signing.key.signature(for: Data(signingInput))
        signingInput.append(UInt8(ascii: "."))
        signature.withUnsafeBytes { DPoPBase64URL.append($0, to: &signingInput) }
        return String(decoding: signingInput, as: UTF8.self)
    }

    /// The `ath` of an access token: base64url(SHA-256(token)).
    package static func ath(_ accessToken: String) -> String {
        String(decoding: DPoPBase64URL.encode(Array(SHA256.hash(data: Data(accessToken.utf8)))), as: UTF8.self)
    }

    /// `htu` per RFC 9449 section 4.3: scheme and host in lower case, no default port, the path (percent-encodings
    /// in upper case, unreserved characters decoded, `/` when empty), no query or fragment.
    package static func htu(origin: HTTPOrigin, path: String) -> String {
        var result = origin.scheme + "://" + origin.host
        if origin.port != (origin.scheme == "https" ? 443 : 80) { result += ":" + String(origin.port) }
        var target = Substring(path)
        if let end = target.firstIndex(where: { $0 == "?" || $0 == "#" }) { target = target[..<end] }
        if target.isEmpty || target.first != "/" { result += "/" }
        if target.utf8.contains(UInt8(ascii: "%")) {
            result += normalizedPercentEncoding(target)
        } else {
            result += target
        }
        return result
    }

    /// RFC 3986 section 6.2.2: `%xx` in upper case, and decoded when it encodes an unreserved character.
    private static func normalizedPercentEncoding(_ text: Substring) -> String {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        func hexValue(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hexValue(bytes[index + 1]),
                let low = hexValue(bytes[index + 2])
            {
                let value = high << 4 | low
                let isUnreserved =
                    (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(value)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(value)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(value)
                    || value == UInt8(ascii: "-") || value == UInt8(ascii: ".") || value == UInt8(ascii: "_")
                    || value == UInt8(ascii: "~")
                if isUnreserved {
                    out.append(value)
                } else {
                    let hex = Array("0123456789ABCDEF".utf8)
                    out += [UInt8(ascii: "%"), hex[Int(high)], hex[Int(low)]]
                }
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// 128 random bits, base64url (22 characters).
    private static func newJTI() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: 16)
        for offset in stride(from: 0, to: 16, by: 8) {
            let word = generator.next() as UInt64
            for shift in 0..<8 { bytes[offset + shift] = UInt8(truncatingIfNeeded: word >> (shift * 8)) }
        }
        return String(decoding: DPoPBase64URL.encode(bytes), as: UTF8.self)
    }

    /// `text` escaped for a JSON string (quotes, backslashes and control characters).
    private static func jsonEscaped(_ text: String) -> String {
        guard
            text.utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") })
        else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    // MARK: - Nonces

    /// The nonce the server at `origin` last asked for, if any.
    ///
    /// - Parameter origin: The server's origin.
    /// - Returns: The nonce.
    public func nonce(for origin: HTTPOrigin) -> String? {
        state.withLock { $0.nonces[origin] }
    }

    /// Learns the `DPoP-Nonce` of an answer from `origin` (any status: servers send it on 200s too).
    ///
    /// - Parameters:
    ///   - response: The answer.
    ///   - origin: The origin it came from.
    /// - Returns: Whether the answer carried a new nonce (one that differs from the one kept).
    @discardableResult
    package func learnNonce(from response: HTTPResponse, origin: HTTPOrigin) -> Bool {
        guard let value = response.headerFields[.dpopNonce], Self.isValidNonce(value) else { return false }
        return state.withLock { state in
            guard state.nonces[origin] != value else { return false }
            if state.nonces[origin] == nil, state.nonces.count >= Self.maximumOrigins {
                state.nonces.removeAll(keepingCapacity: true)
            }
            state.nonces[origin] = value
            return true
        }
    }

    /// RFC 9449 section 8.1: `nonce = 1*NQCHAR` (visible ASCII without `"` and `\`), here at most 1024 bytes.
    static func isValidNonce(_ value: String) -> Bool {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= 1024 else { return false }
        return bytes.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }

    // MARK: - Binding

    /// Throws when `accessToken` is a JWT bound (`cnf.jkt`) to another key: such a request is never sent.
    /// An opaque token is not checked here (its binding is checked when the session is restored).
    package func checkBinding(of accessToken: String) throws(NetworkRetryError) {
        if state.withLock({ $0.checkedToken == accessToken }) { return }
        if let claims = try? JWT(parsing: accessToken).claims, let confirmation = claims.object("cnf"),
            let jkt = confirmation["jkt"]?.stringValue, jkt != thumbprint
        {
            throw .dpopKeyUnavailable
        }
        state.withLock { $0.checkedToken = accessToken }
    }

    /// The `Authorization: DPoP <token>` field, built once per token.
    package func authorizationField(for accessToken: String) -> HTTPField {
        if let cached = state.withLock({ $0.authorization }), cached.accessToken == accessToken { return cached.field }
        let field = HTTPField(name: .authorization, value: "DPoP " + accessToken)
        state.withLock { $0.authorization = (accessToken, field) }
        return field
    }

    /// `DPoPProver(jkt: <thumbprint>)`: the public thumbprint only.
    public var description: String { "DPoPProver(jkt: \(thumbprint))" }
}

extension HTTPField.Name {
    /// `DPoP`: the proof header field (RFC 9449 section 4.1).
    package static var dpop: HTTPField.Name { HTTPField.Name("DPoP")! }
    /// `DPoP-Nonce`: the server's nonce (RFC 9449 section 8).
    package static var dpopNonce: HTTPField.Name { HTTPField.Name("DPoP-Nonce")! }
}

/// Whether a token type is `DPoP` (case-insensitive, RFC 9449 section 5).
package func isDPoPTokenType(_ type: String) -> Bool {
    type.utf8.count == 4 && type.lowercased() == "dpop"
}

/// Base64url without padding, for proofs.
package enum DPoPBase64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `bytes`.
    package static func encode(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        append(bytes, to: &out)
        return out
    }

    /// Appends the encoding of `bytes` to `out`.
    package static func append(_ bytes: some Sequence<UInt8>, to out: inout [UInt8]) {
        let appended: Bool? = bytes.withContiguousStorageIfAvailable { buffer in
            append(UnsafeRawBufferPointer(buffer), to: &out)
            return true
        }
        if appended == nil { append(Array(bytes), to: &out) }
    }

    /// Appends the encoding of `bytes` to `out`, three bytes at a time, into space reserved at once.
    package static func append(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        let count = bytes.count
        let whole = count / 3
        let produced = whole * 4 + [0, 2, 3][count % 3]
        let start = out.count
        out.append(contentsOf: repeatElement(0, count: produced))
        alphabet.withUnsafeBufferPointer { table in
            out.withUnsafeMutableBufferPointer { buffer in
                var target = start
                for group in 0..<whole {
                    let index = group * 3
                    let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                    buffer[target] = table[Int(value >> 18 & 63)]
                    buffer[target + 1] = table[Int(value >> 12 & 63)]
                    buffer[target + 2] = table[Int(value >> 6 & 63)]
                    buffer[target + 3] = table[Int(value & 63)]
                    target += 4
                }
                let index = whole * 3
                switch count - index {
                case 1:
                    let value = UInt32(bytes[index]) << 16
                    buffer[target] = table[Int(value >> 18 & 63)]
                    buffer[target + 1] = table[Int(value >> 12 & 63)]
                case 2:
                    let value = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
                    buffer[target] = table[Int(value >> 18 & 63)]
                    buffer[target + 1] = table[Int(value >> 12 & 63)]
                    buffer[target + 2] = table[Int(value >> 6 & 63)]
                default:
                    break
                }
            }
        }
    }
}

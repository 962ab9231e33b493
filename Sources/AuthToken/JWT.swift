import Foundation

/// A compact JWS/JWT read without verifying its signature.
///
/// Verifying the signature is the resource server's business; a client reads the claims only to know
/// when to refresh and whom the token is for. Never make an authorization decision from these claims.
///
/// ```swift
/// let jwt = try JWT(parsing: token)
/// jwt.header.algorithm        // "RS256"
/// jwt.claims.subject          // "user-42"
/// jwt.claims.expiration       // Date
/// ```
public struct JWT: Sendable, Hashable {
    /// Tokens longer than this are rejected with ``MalformedReason/tooLong`` before any decoding.
    package static let maximumLength = 64 * 1024

    /// The JOSE header.
    public let header: JWTHeader
    /// The claims set.
    public let claims: JWTClaims
    /// Whether the third segment is empty (an unsecured JWT, `alg: none`).
    package let hasEmptySignature: Bool

    /// Parses a compact JWT: three base64url segments separated by dots, the first two JSON objects.
    ///
    /// - Parameter token: The compact token.
    /// - Throws: ``AuthTokenError/malformedJWT(_:_:)`` naming the part and the reason.
    public init(parsing token: String) throws(AuthTokenError) {
        var token = token
        let result: Result<JWT, AuthTokenError> = token.withUTF8 { bytes in
            do throws(AuthTokenError) {
                return .success(try JWT(bytes: bytes))
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// Reads only the JOSE header of a compact token (for example to pick a key by `kid`).
    ///
    /// - Parameter token: The compact token.
    /// - Returns: The header.
    /// - Throws: ``AuthTokenError/malformedJWT(_:_:)`` when the structure or the header is malformed.
    public static func header(of token: String) throws(AuthTokenError) -> JWTHeader {
        var token = token
        let result: Result<JWTHeader, AuthTokenError> = token.withUTF8 { bytes in
            do throws(AuthTokenError) {
                let segments = try Segments(bytes)
                return .success(JWTHeader(text: try decodeHeader(segments.header)))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) throws(AuthTokenError) {
        let segments = try Segments(bytes)
        header = JWTHeader(text: try Self.decodeHeader(segments.header))
        claims = try Self.decodeClaims(segments.payload)
        hasEmptySignature = segments.signature.isEmpty
        guard Base64URLCodec.isValid(segments.signature) else {
            let hasMoreSegments = segments.signature.contains(UInt8(ascii: "."))
            throw .malformedJWT(
                hasMoreSegments ? .structure : .signature, hasMoreSegments ? .segmentCount : .invalidBase64URL)
        }
    }

    /// The three segments of a compact token, located without copying.
    private struct Segments {
        let header: UnsafeBufferPointer<UInt8>
        let payload: UnsafeBufferPointer<UInt8>
        let signature: UnsafeBufferPointer<UInt8>

        init(_ bytes: UnsafeBufferPointer<UInt8>) throws(AuthTokenError) {
            guard bytes.count <= JWT.maximumLength else { throw .malformedJWT(.structure, .tooLong) }
            // Find the first two dots; a third dot is caught when the signature is checked, so the
            // signature (a third of a typical token) is scanned once, not twice.
            guard let first = Self.dot(in: bytes, from: 0), let second = Self.dot(in: bytes, from: first + 1)
            else { throw .malformedJWT(.structure, .segmentCount) }
            header = UnsafeBufferPointer(rebasing: bytes[0..<first])
            payload = UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second])
            signature = UnsafeBufferPointer(rebasing: bytes[(second + 1)...])
            guard !header.isEmpty else { throw .malformedJWT(.header, .emptySegment) }
            guard !payload.isEmpty else { throw .malformedJWT(.payload, .emptySegment) }
        }

        /// The index of the first `.` at or after `start`, found by `memchr` (vectorised in the C library; a byte
        /// loop was a tenth of a parse).
        private static func dot(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
            guard let base = bytes.baseAddress, start < bytes.count,
                let found = memchr(base + start, Int32(UInt8(ascii: ".")), bytes.count - start)
            else { return nil }
            return UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
    }

    /// Decodes the header segment and scans its JSON.
    private static func decodeHeader(_ segment: UnsafeBufferPointer<UInt8>) throws(AuthTokenError) -> JSONObjectText {
        try decodeObject(segment, part: .header)
    }

    /// Decodes the payload segment and scans its JSON.
    private static func decodeClaims(_ segment: UnsafeBufferPointer<UInt8>) throws(AuthTokenError) -> JWTClaims {
        JWTClaims(text: try decodeObject(segment, part: .payload))
    }

    /// Decodes a segment into a temporary buffer, scans it as a JSON object and keeps a copy of its bytes:
    /// `[UInt8](unsafeUninitializedCapacity:)` reaches a standard-library function that looks the array type's
    /// generic metadata up in the runtime on every call (about 500 instructions), while copying a buffer into a new
    /// array does not.
    private static func decodeObject(
        _ segment: UnsafeBufferPointer<UInt8>, part: JWTPart
    ) throws(AuthTokenError) -> JSONObjectText {
        guard let count = Base64URLCodec.decodedCount(segment) else { throw .malformedJWT(part, .invalidBase64URL) }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { buffer throws(AuthTokenError) in
            guard Base64URLCodec.decode(segment, into: buffer) else { throw .malformedJWT(part, .invalidBase64URL) }
            let decoded = UnsafeBufferPointer(buffer)
            return JSONObjectText(bytes: Array(decoded), members: try scanObject(decoded, part: part))
        }
    }

    private static func scanObject(
        _ decoded: UnsafeBufferPointer<UInt8>, part: JWTPart
    ) throws(AuthTokenError) -> [JSONObjectText.Member] {
        do throws(JSONParser.Failure) {
            return try JSONParser.scanObject(decoded)
        } catch {
            // The scan accepts exactly the objects the parser accepts; the parser tells why this is not one.
        }
        let parsed: JSONValue
        do throws(JSONParser.Failure) {
            parsed = try JSONParser.parse(decoded)
        } catch .tooDeep {
            throw .malformedJWT(part, .tooDeep)
        } catch {  // .invalid, .duplicateName: no duplicate check is asked for here
            // Tell "not text at all" apart from "text that is not JSON".
            throw .malformedJWT(part, UTF8Validation.isValid(decoded) ? .notJSON : .notUTF8)
        }
        guard case .object = parsed else { throw .malformedJWT(part, .notJSONObject) }
        assertionFailure("the object scan refused an object the parser accepts")
        throw .malformedJWT(part, .notJSON)
    }
}

/// The JOSE header of a JWT.
public struct JWTHeader: Sendable, Hashable {
    /// The header's JSON, compared by its members (two headers with the same parameters are equal, however
    /// their text is spaced or ordered).
    private let text: ComparedByMembers

    init(text: JSONObjectText) {
        self.text = ComparedByMembers(text: text)
    }

    /// Every header parameter, parsed from the header's JSON on each read (``algorithm``, ``type`` and ``keyID``
    /// read one parameter without making the dictionary).
    public var members: [String: JSONValue] { text.text.dictionary }

    /// `alg`: the signature algorithm, such as `RS256`.
    public var algorithm: String? { self["alg"]?.stringValue }
    /// `typ`: the media type, usually `JWT`.
    public var type: String? { self["typ"]?.stringValue }
    /// `kid`: the key ID.
    public var keyID: String? { self["kid"]?.stringValue }

    /// A header parameter by name.
    ///
    /// - Parameter name: The parameter name.
    package subscript(name: String) -> JSONValue? { text.text.value(named: name) }

    /// A JSON object compared and hashed by its members rather than its bytes.
    private struct ComparedByMembers: Sendable, Hashable {
        let text: JSONObjectText

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.text.bytes == rhs.text.bytes || lhs.text.dictionary == rhs.text.dictionary
        }

        func hash(into hasher: inout Hasher) { hasher.combine(text.dictionary) }
    }
}

// libFuzzer entry point for the JWT parser. Built together with Sources/AuthToken by Fuzz/run.
//
// Differential: `JWT(parsing:)` scans the header and payload once and parses a claim only when it is read. Every
// token is also read the way the full parser reads it (split at the first two dots, base64url-decoded,
// `JSONParser.parse` into dictionaries, as `members` does), and the two readings must agree on acceptance, on the
// reason for a refusal and on every value read. A disagreement traps with a message that names what differed, never
// the input.
import Foundation

/// Reads one input as a token and, when it cannot start one, also as the JSON of a token's header and payload, and
/// checks each reading against the full parser's; libFuzzer calls it for each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWT(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = UnsafeBufferPointer(start: data, count: size)
    let text = String(decoding: bytes, as: UTF8.self)
    compare(token: text, seed: size)
    // An input whose first byte cannot begin a token (`{`, whitespace, a BOM, a quote, ...) is JSON the mutator
    // made: it becomes the payload of a token (and, for an even length, its header too), so the scan sees mutated
    // JSON, not only random base64url.
    if let first = bytes.first, first != UInt8(ascii: "."), !Base64URLCodec.isAlphabet(first) {
        let json = base64URL(bytes)
        let header = size % 2 == 0 ? json : fixedHeader
        compare(token: header + "." + json + ".c2ln", seed: size)
    }
    let token = AuthToken.withParsedExpiration(
        accessToken: text, refreshToken: text.isEmpty ? nil : "r", receivedAt: Date(timeIntervalSince1970: 0))
    _ = token.validate(now: Date(timeIntervalSince1970: 1_000_000_000))
    _ = token.willExpireSoon(at: Date(timeIntervalSince1970: 1_000_000_000))
    _ = token.sanitizedDescription
    return 0
}

/// `{"alg":"RS256","typ":"JWT"}`, base64url-encoded.
private let fixedHeader = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9"

/// Names every token is asked for: registered claims and header parameters, near misses, names with escapes or
/// quotes, and names that have another canonically equivalent spelling (precomposed and decomposed, the Kelvin sign
/// and `K`, the Greek question mark and `;`).
private let askedNames = [
    "exp", "iat", "nbf", "aud", "sub", "iss", "jti", "alg", "typ", "kid", "scope", "", "e", "ex", "expx", "EXP",
    "exp ", "K", "\u{212A}", ";", "\u{37E}", "\u{E9}", "e\u{301}", "caf\u{E9}", "cafe\u{301}", "\u{1F600}",
    "a\"b", "x\\y", "\u{0}", "\u{FEFF}exp",
]

/// Stops the run: the scan and the full parser read one token differently. The message names what differed and
/// nothing of the input.
private func disagree(_ what: StaticString) -> Never {
    fatalError("JWT fuzz: the claim scan and the full parser disagree on \(what)")
}

/// Reads `token` both ways and traps on any difference.
private func compare(token: String, seed: Int) {
    let expected = Reference.read(Array(token.utf8))
    let read = Result { () throws(AuthTokenError) in try JWT(parsing: token) }
    switch (read, expected) {
    case (.failure(let error), .failure(let reason)):
        guard error == reason else { disagree("the reason for refusing a token") }
        // `header(of:)` reads the header alone: it refuses a token whose header the full parser refuses.
        if reason.part == .header {
            guard (try? JWT.header(of: token)) == nil else { disagree("whether a header is accepted") }
        }
    case (.success(let jwt), .success(let reference)):
        compare(jwt, reference, seed: seed)
        guard let header = try? JWT.header(of: token), header == jwt.header else {
            disagree("the header read alone")
        }
    default:
        disagree("whether a token is accepted")
    }
}

/// Compares every accessor of an accepted token with the full parser's dictionaries.
private func compare(_ jwt: JWT, _ reference: Reference.Token, seed: Int) {
    let header = jwt.header
    let claims = jwt.claims
    guard jwt.hasEmptySignature == reference.hasEmptySignature else { disagree("an empty signature") }
    guard header.members == reference.header else { disagree("the header's members") }
    guard header.algorithm == reference.header["alg"]?.stringValue else { disagree("alg") }
    guard header.type == reference.header["typ"]?.stringValue else { disagree("typ") }
    guard header.keyID == reference.header["kid"]?.stringValue else { disagree("kid") }
    guard claims.members == reference.claims else { disagree("the claims' members") }
    guard claims.expiration == Reference.date(reference.claims, "exp").value else { disagree("expiration") }
    guard claims.issuedAt == Reference.date(reference.claims, "iat").value else { disagree("issuedAt") }
    guard claims.notBefore == Reference.date(reference.claims, "nbf").value else { disagree("notBefore") }
    guard claims.audience == Reference.audience(reference.claims) else { disagree("audience") }
    guard claims.subject == reference.claims["sub"]?.stringValue else { disagree("subject") }
    guard claims.issuer == reference.claims["iss"]?.stringValue else { disagree("issuer") }
    guard claims.jwtID == reference.claims["jti"]?.stringValue else { disagree("jwtID") }
    let exp = Result { () throws(AuthTokenError) in try claims.date("exp") }
    guard exp == Reference.date(reference.claims, "exp") else { disagree("date(\"exp\")") }
    guard claims.string("scope") == reference.claims["scope"]?.stringValue else { disagree("a string claim") }
    // A few of the asked names, chosen by the input's length so that every name is asked across the corpus.
    for offset in 0..<6 { compare(askedNames[(seed &+ offset * 5) % askedNames.count], claims, header, reference) }
    // The names the token holds, also spelled in their other canonically equivalent forms and one scalar short.
    for name in reference.claims.keys.prefix(8) {
        compare(name, claims, header, reference)
        guard name.utf8.contains(where: { $0 >= 0x80 }) else { continue }
        compare(name.precomposedStringWithCanonicalMapping, claims, header, reference)
        compare(name.decomposedStringWithCanonicalMapping, claims, header, reference)
        compare(String(name.unicodeScalars.dropLast()), claims, header, reference)
    }
    for name in reference.header.keys.prefix(4) {
        guard header[name] == reference.header[name] else { disagree("a header parameter's value") }
    }
}

/// Compares what the scan and the dictionaries read for one name.
private func compare(_ name: String, _ claims: JWTClaims, _ header: JWTHeader, _ reference: Reference.Token) {
    guard claims[name] == reference.claims[name] else { disagree("a claim's value") }
    guard header[name] == reference.header[name] else { disagree("a header parameter's value") }
}

/// The token as `JWT(parsing:)` read it before the scan: each part parsed whole into a dictionary.
private enum Reference {
    struct Token {
        let header: [String: JSONValue]
        let claims: [String: JSONValue]
        let hasEmptySignature: Bool
    }

    static func read(_ bytes: [UInt8]) -> Result<Token, AuthTokenError> {
        let dot = UInt8(ascii: ".")
        guard bytes.count <= JWT.maximumLength else { return .failure(.malformedJWT(.structure, .tooLong)) }
        guard let first = bytes.firstIndex(of: dot), let second = bytes[(first + 1)...].firstIndex(of: dot) else {
            return .failure(.malformedJWT(.structure, .segmentCount))
        }
        let headerText = bytes[..<first]
        let payloadText = bytes[(first + 1)..<second]
        let signature = Array(bytes[(second + 1)...])
        guard !headerText.isEmpty else { return .failure(.malformedJWT(.header, .emptySegment)) }
        guard !payloadText.isEmpty else { return .failure(.malformedJWT(.payload, .emptySegment)) }
        let header: [String: JSONValue]
        switch object(headerText, part: .header) {
        case .success(let members): header = members
        case .failure(let error): return .failure(error)
        }
        let claims: [String: JSONValue]
        switch object(payloadText, part: .payload) {
        case .success(let members): claims = members
        case .failure(let error): return .failure(error)
        }
        guard signature.withUnsafeBufferPointer({ Base64URLCodec.isValid($0) }) else {
            let more = signature.contains(dot)
            return .failure(.malformedJWT(more ? .structure : .signature, more ? .segmentCount : .invalidBase64URL))
        }
        return .success(Token(header: header, claims: claims, hasEmptySignature: signature.isEmpty))
    }

    /// One part decoded and parsed whole, refused for the reason the parser gives.
    private static func object(
        _ segment: ArraySlice<UInt8>, part: JWTPart
    ) -> Result<[String: JSONValue], AuthTokenError> {
        guard let decoded = Array(segment).withUnsafeBufferPointer({ Base64URLCodec.decode($0) }) else {
            return .failure(.malformedJWT(part, .invalidBase64URL))
        }
        let parsed: Result<JSONValue, JSONParser.Failure> = decoded.withUnsafeBufferPointer { text in
            Result { () throws(JSONParser.Failure) in try JSONParser.parse(text) }
        }
        switch parsed {
        case .success(.object(let members)): return .success(members)
        case .success: return .failure(.malformedJWT(part, .notJSONObject))
        case .failure(.tooDeep): return .failure(.malformedJWT(part, .tooDeep))
        case .failure:
            let isText = String(validating: decoded, as: UTF8.self) != nil
            return .failure(.malformedJWT(part, isText ? .notJSON : .notUTF8))
        }
    }

    /// A NumericDate read from the dictionary, by the rules of ``JWTClaims/date(_:)``.
    static func date(_ members: [String: JSONValue], _ name: String) -> Result<Date?, AuthTokenError> {
        guard let value = members[name] else { return .success(nil) }
        guard let seconds = value.doubleValue, seconds.isFinite, seconds >= 0, seconds <= JWTClaims.latestNumericDate
        else { return .failure(.invalidClaim(name)) }
        return .success(Date(timeIntervalSince1970: seconds))
    }

    /// `aud` read from the dictionary: one string, or the strings of an array.
    static func audience(_ members: [String: JSONValue]) -> [String] {
        switch members["aud"] {
        case .string(let value): [value]
        case .array(let values): values.compactMap(\.stringValue)
        default: []
        }
    }
}

extension Result where Success == Date? {
    /// The date, or `nil` when there is none or it is invalid (as the `expiration` property reads it).
    fileprivate var value: Date? { (try? get()) ?? nil }
}

/// `bytes` in unpadded base64url.
private func base64URL(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
    let alphabet = Base64URLCodec.alphabet
    var encoded: [UInt8] = []
    encoded.reserveCapacity((bytes.count * 4 + 2) / 3)
    var index = 0
    while index + 3 <= bytes.count {
        let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
        for shift in [18, 12, 6, 0] { encoded.append(alphabet[Int(group >> UInt32(shift) & 0x3F)]) }
        index += 3
    }
    let remainder = bytes.count - index
    if remainder > 0 {
        let group = UInt32(bytes[index]) << 16 | (remainder == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
        encoded.append(alphabet[Int(group >> 18 & 0x3F)])
        encoded.append(alphabet[Int(group >> 12 & 0x3F)])
        if remainder == 2 { encoded.append(alphabet[Int(group >> 6 & 0x3F)]) }
    }
    return String(decoding: encoded, as: UTF8.self)
}

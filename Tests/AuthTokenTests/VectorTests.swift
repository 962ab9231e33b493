import AuthToken
import Foundation
import Testing
import TokenKitCompatibility
import TokenKitLogCheck

/// The published JOSE vectors in `Vectors/jws-rfc7515.json` (RFC 7515 appendix A, RFC 7519 section 3.1).
@Suite(.logLeakCheck()) struct VectorTests {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let name: String
        let alg: String
        let header_json: String
        let payload_json: String
        let compact: String
        var testDescription: String { name }
    }

    static let vectors: [Vector] = {
        struct File: Decodable { let vectors: [Vector] }
        let url = Bundle.module.url(forResource: "jws-rfc7515", withExtension: "json", subdirectory: "Vectors")!
        return try! JSONDecoder().decode(File.self, from: Data(contentsOf: url)).vectors
    }()

    @Test(arguments: vectors)
    func headerMatchesThePublishedJSON(_ vector: Vector) throws {
        let header = try JWT.header(of: vector.compact)
        #expect(header.algorithm == vector.alg)
        let published = try JSONSerialization.jsonObject(with: Data(vector.header_json.utf8)) as! [String: Any]
        #expect(header.members.count == published.count)
        #expect(header.type == published["typ"] as? String)
    }

    @Test(arguments: vectors.filter { $0.payload_json.hasPrefix("{") })
    func claimsComeOutExactlyAsPublished(_ vector: Vector) throws {
        let jwt = try JWT(parsing: vector.compact)
        #expect(jwt.claims.issuer == "joe")
        #expect(jwt.claims["exp"] == .integer(1_300_819_380))
        #expect(jwt.claims.expiration == Date(timeIntervalSince1970: 1_300_819_380))
        #expect(jwt.claims.bool("http://example.com/is_root") == true)
        #expect(jwt.claims.members.count == 3)
        #expect(jwt.hasEmptySignature == (vector.alg == "none"))
    }

    @Test func aPayloadThatIsNotJSONIsReportedAsSuch() throws {
        let vector = try #require(Self.vectors.first { $0.name.hasSuffix("A.4") })
        #expect(vector.payload_json == "Payload")
        #expect(throws: AuthTokenError.malformedJWT(.payload, .notJSON)) { try JWT(parsing: vector.compact) }
    }

    @Test func expiryAndUserComeFromTheSeedAPI() throws {
        let compact = try #require(Self.vectors.first).compact
        let token = AuthToken.withParsedExpiration(
            accessToken: compact, refreshToken: nil, receivedAt: Date(timeIntervalSince1970: 1_300_000_000))
        #expect(token.parseExpirationFromJWT() == Date(timeIntervalSince1970: 1_300_819_380))
        #expect(token.expiresAt == Date(timeIntervalSince1970: 1_300_819_380))
        #expect(token.parseUserIdFromJWT() == nil)
    }
}

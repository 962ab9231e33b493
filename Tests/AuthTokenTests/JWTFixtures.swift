import Foundation
import TokenKitLogCheck

/// Builds compact JWTs for tests. The signature is a fixed fake: nothing here verifies it.
enum JWTFixtures {
    static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URL(_ text: String) -> String { base64URL(Array(text.utf8)) }

    /// A compact JWT whose payload is `payloadJSON` verbatim, registered as a test secret.
    static func token(payloadJSON: String, headerJSON: String = #"{"alg":"RS256","typ":"JWT"}"#) -> String {
        let token = "\(base64URL(headerJSON)).\(base64URL(payloadJSON)).c2lnbmF0dXJl"
        TestSecrets.shared.register(token, as: .accessToken)
        return token
    }

    /// A compact JWT with the given numeric claims and a subject.
    static func token(sub: String = "user-42", iat: Int? = nil, exp: Int? = nil, nbf: Int? = nil) -> String {
        var members = [#""sub":"\#(sub)""#]
        if let iat { members.append(#""iat":\#(iat)"#) }
        if let exp { members.append(#""exp":\#(exp)"#) }
        if let nbf { members.append(#""nbf":\#(nbf)"#) }
        return token(payloadJSON: "{" + members.joined(separator: ",") + "}")
    }
}

// libFuzzer entry point for the token-endpoint response parser (`TokenResponse.parse`) and the OAuth error-body
// reader (`TokenResponse.oauthErrorCode`). Fuzz/run compiles it in one module with Sources/AuthToken/*.swift,
// Sources/TokenRefresh/TokenRefreshError.swift and Sources/TokenRefresh/Strategies/TokenResponse.swift, after
// stripping the `import AuthToken` lines (there is no separate AuthToken module in that build).
import Foundation

/// Parses the input as a success body and as an error body, and checks what either accepts:
/// - neither traps or hangs, and a rejected success body is exactly `malformedResponse`;
/// - an accepted response keeps the parser's promises (non-empty bounded access token, a bounded token type
///   spelled `Bearer` when it is bearer, a finite non-negative bounded lifetime, no empty refresh token);
/// - its description and mirror never show the access or refresh token;
/// - an OAuth error code, if found, is a short lowercase ASCII name, so it can be shown in descriptions.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTokenResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    checkSuccessBody(body)
    checkErrorBody(body)
    return 0
}

private func checkSuccessBody(_ body: Data) {
    let response: TokenResponse
    do {
        response = try TokenResponse.parse(body)
    } catch {
        precondition(error == .malformedResponse, "parse threw \(error), not malformedResponse")
        precondition(error.oauthError == nil && error.status == nil, "parse attached details: \(error)")
        return
    }
    precondition(!body.isEmpty && body.count <= TokenResponse.maximumBodySize, "accepted an out-of-bounds body")
    precondition(!response.accessToken.isEmpty && response.accessToken.utf8.count <= 16 * 1024)
    precondition(!response.tokenType.isEmpty && response.tokenType.utf8.count <= 64)
    precondition(response.tokenType.lowercased() != "bearer" || response.tokenType == "Bearer")
    if let lifetime = response.expiresIn {
        precondition(lifetime.isFinite && lifetime >= 0 && lifetime <= 10 * 365 * 86_400, "lifetime \(lifetime)")
    }
    precondition(response.refreshToken.map { !$0.isEmpty } ?? true, "empty refresh token kept")

    // Redaction: the description and mirror of a response whose tokens are placeholders, with the placeholders'
    // fingerprints swapped for the real ones, is what may be shown. A token found in the real text but not in
    // that reference came from the token itself.
    let placeholders = ("\u{1}", "\u{2}")
    let reference = TokenResponse(
        accessToken: placeholders.0, refreshToken: response.refreshToken.map { _ in placeholders.1 },
        tokenType: response.tokenType, expiresIn: response.expiresIn, scope: response.scope, userID: response.userID)
    func shown(_ value: TokenResponse) -> String {
        value.description + "\n"
            + Mirror(reflecting: value).children.map { "\($0.label ?? ""): \($0.value)" }.joined(separator: "\n")
    }
    var allowed = shown(reference).replacingOccurrences(
        of: AuthToken.fingerprint(placeholders.0), with: AuthToken.fingerprint(response.accessToken))
    if let refreshToken = response.refreshToken {
        allowed = allowed.replacingOccurrences(
            of: AuthToken.fingerprint(placeholders.1), with: AuthToken.fingerprint(refreshToken))
    }
    let actual = shown(response)
    for secret in [response.accessToken, response.refreshToken].compactMap(\.self) {
        precondition(!actual.contains(secret) || allowed.contains(secret), "description or mirror shows a token")
    }

    // The token built from it must be usable without trapping, and keep the parsed lifetime.
    let receivedAt = Date(timeIntervalSince1970: 1_700_000_000)
    let token = response.token(receivedAt: receivedAt, keeping: "previous-refresh")
    precondition(token.accessToken == response.accessToken)
    precondition(token.refreshToken == (response.refreshToken ?? "previous-refresh"))
    if let lifetime = response.expiresIn, let expiresAt = token.expiresAt {
        precondition(expiresAt == receivedAt.addingTimeInterval(lifetime), "expiry does not follow expires_in")
    }
    _ = token.validate(now: receivedAt)
    _ = token.willExpireSoon(at: receivedAt)
    _ = token.sanitizedDescription
}

private func checkErrorBody(_ body: Data) {
    guard let code = TokenResponse.oauthErrorCode(body) else { return }
    precondition(!code.isEmpty && code.utf8.count <= 64, "error code length \(code.utf8.count)")
    precondition(
        code.utf8.allSatisfy { ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || ($0 >= 0x30 && $0 <= 0x39) },
        "error code outside [a-z0-9_]")
    let error = TokenRefreshError.unexpectedResponse.with(oauthError: code).with(status: 400)
    precondition(error.description.contains(code) && error == .unexpectedResponse)
}

import Foundation
import HTTPTypes
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

@testable import NetworkRetry

/// The Python of the pinned JOSE venv, from `TOKENKIT_JOSE_PYTHON`.
enum DPoPInteropPython {
    static var path: String? { ProcessInfo.processInfo.environment["TOKENKIT_JOSE_PYTHON"] }
}

/// Proofs minted by TokenKit, verified by jwcrypto and PyJWT (`Interop/jose/verify_dpop.py`): signature, header,
/// claims, `htu` normalisation, `ath`, `nonce` and the key's thumbprint, as an independent implementation reads them.
///
/// Needs `TOKENKIT_JOSE_PYTHON`, the Python of the pinned JOSE venv (`.ci/jose-interop` sets it); skipped without it.
@Suite(
    .logLeakCheck(),
    .enabled(
        if: DPoPInteropPython.path != nil,
        "TOKENKIT_JOSE_PYTHON is not set: run .ci/jose-interop, or Interop/jose/setup and set it to the venv's python")
)
struct DPoPInteropTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static var script: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Interop/jose/verify_dpop.py")
    }

    struct Case: Encodable {
        let proof: String
        let htm: String
        let htu: String
        let accessToken: String?
        let nonce: String?
        let jkt: String
        let now: Int
    }

    struct Verdict: Decodable {
        let ok: Bool
        let errors: [String]
        let thumbprint: String?
    }

    /// Runs the Python verifier over `cases`.
    func verify(_ cases: [Case]) async throws -> [Verdict] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("dpop-interop-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let input = directory.appendingPathComponent("cases.json")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        encoder.keyEncodingStrategy = .convertToSnakeCase
        try encoder.encode(cases).write(to: input)
        let (status, data) = try await ChildProcess.run(
            URL(fileURLWithPath: try #require(DPoPInteropPython.path)), arguments: [Self.script.path, input.path],
            environment: ProcessInfo.processInfo.environment)
        #expect(status == 0)
        return try JSONDecoder().decode([Verdict].self, from: data)
    }

    @Test func proofsForTokenAndResourceRequestsVerifyInJwcryptoAndPyJWT() async throws {
        let prover = DPoPProver(key: SoftwareDPoPKey(), now: { Self.now })
        let token = "interop-dpop-access-token"
        TestSecrets.shared.register(token, as: .accessToken)
        let tokenURL = try #require(URL(string: "https://auth.example.com/oauth/token"))
        let apiURL = try #require(URL(string: "https://API.Example.com:443/v1/items?page=2#top"))
        let portURL = try #require(URL(string: "https://api.example.com:8443/a%7eb/%2f"))
        var nonceAnswer = HTTPFields()
        nonceAnswer[.dpopNonce] = "as-nonce-1"
        let nonceURL = try #require(URL(string: "https://nonce.example.com/token"))
        prover.learnNonce(
            from: HTTPResponse(status: .ok, headerFields: nonceAnswer), origin: try #require(HTTPOrigin(nonceURL)))
        var cases = [
            Case(
                proof: try prover.proof(method: "POST", url: tokenURL), htm: "POST",
                htu: "https://auth.example.com/oauth/token", accessToken: nil, nonce: nil, jkt: prover.thumbprint,
                now: 1_800_000_000),
            Case(
                proof: try prover.proof(method: "GET", url: apiURL, accessToken: token), htm: "GET",
                htu: "https://api.example.com/v1/items", accessToken: token, nonce: nil, jkt: prover.thumbprint,
                now: 1_800_000_000),
            Case(
                proof: try prover.proof(method: "DELETE", url: portURL, accessToken: token), htm: "DELETE",
                htu: "https://api.example.com:8443/a~b/%2F", accessToken: token, nonce: nil, jkt: prover.thumbprint,
                now: 1_800_000_000),
            Case(
                proof: try prover.proof(method: "POST", url: nonceURL), htm: "POST", htu: nonceURL.absoluteString,
                accessToken: nil, nonce: "as-nonce-1", jkt: prover.thumbprint, now: 1_800_000_000),
        ]
        let verdicts = try await verify(cases)
        #expect(verdicts.count == 4)
        for (index, verdict) in verdicts.enumerated() {
            #expect(verdict.ok, "case \(index): \(verdict.errors)")
            #expect(verdict.thumbprint == prover.thumbprint)
        }
        // Controls: the verifier does refuse a proof for another URL, and a proof whose payload was swapped.
        let parts = cases[0].proof.split(separator: ".")
        let otherPayload = cases[1].proof.split(separator: ".")[1]
        cases = [
            Case(
                proof: cases[0].proof, htm: "POST", htu: "https://auth.example.com/other", accessToken: nil, nonce: nil,
                jkt: prover.thumbprint, now: 1_800_000_000),
            Case(
                proof: [parts[0], otherPayload, parts[2]].joined(separator: "."), htm: "GET",
                htu: "https://api.example.com/v1/items", accessToken: token, nonce: nil, jkt: prover.thumbprint,
                now: 1_800_000_000),
        ]
        let controls = try await verify(cases)
        #expect(controls.map(\.ok) == [false, false])
        #expect(controls.first?.errors == ["htu"])
    }
}

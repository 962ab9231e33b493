// Compiled only with the `AsyncHTTPClientTransport` and `OpenAPIMiddleware` package traits.
#if AsyncHTTPClientTransport && OpenAPIMiddleware
import AuthToken
import Foundation
import HTTPTypes
import NetworkRetry
import OpenAPIRuntime
import Testing
import TokenKitLogCheck
import TokenKitOpenAPI
import TokenKitTestSupport

@Suite(.logLeakCheck()) struct BearerTokenMiddlewareTests {
    struct Boom: Error {}

    /// Records what `next` was given and answers from a list of statuses.
    final class Next: @unchecked Sendable {
        // `@unchecked Sendable`: `seen` and `statuses` are only touched while holding `lock`.
        private let lock = NSLock()
        private var statuses: [(Int, String?)]
        private var seen: [(String?, [UInt8]?)] = []

        init(_ statuses: [(Int, String?)]) { self.statuses = statuses }

        var calls: [(authorization: String?, body: [UInt8]?)] {
            lock.withLock { seen.map { (authorization: $0.0, body: $0.1) } }
        }

        func callAsFunction(
            _ request: HTTPRequest, _ body: HTTPBody?, _ url: URL
        ) async throws -> (HTTPResponse, HTTPBody?) {
            let bytes: [UInt8]? = if let body { try await [UInt8](collecting: body, upTo: 1 << 20) } else { nil }
            let (status, challenge) = lock.withLock {
                seen.append((request.headerFields[.authorization], bytes))
                return statuses.removeFirst()
            }
            var fields = HTTPFields()
            if let challenge { fields[.wwwAuthenticate] = challenge }
            return (HTTPResponse(status: .init(code: status), headerFields: fields), HTTPBody("ok"))
        }
    }

    let baseURL = URL(string: "https://api.example.com/v1")!
    let request = HTTPRequest(method: .post, scheme: nil, authority: nil, path: "/meals")

    func middleware(_ provider: SequenceTokenProvider, limit: Int = 1024) -> BearerTokenMiddleware {
        BearerTokenMiddleware(
            tokenProvider: provider, allowedOrigins: [HTTPOrigin(string: "https://api.example.com")!],
            maximumBufferedBodySize: limit)
    }

    static func stream(_ chunks: [String], failing: Bool = false) -> HTTPBody {
        let stream = AsyncThrowingStream<ArraySlice<UInt8>, any Error> { continuation in
            for chunk in chunks { continuation.yield(ArraySlice(chunk.utf8)) }
            continuation.finish(throwing: failing ? Boom() : nil)
        }
        return HTTPBody(stream, length: .unknown, iterationBehavior: .single)
    }

    @Test func aStreamedBodyIsCollectedAndReplayedAfterARefresh() async throws {
        let provider = SequenceTokenProvider()
        let next = Next([(401, #"Bearer error="invalid_token""#), (200, nil)])
        let (response, _) = try await middleware(provider).intercept(
            request, body: Self.stream(["{\"kcal\":", "420}"]), baseURL: baseURL, operationID: "addMeal",
            next: next.callAsFunction)
        #expect(response.status == .ok)
        #expect(
            next.calls.map(\.authorization) == [
                "Bearer \(SequenceTokenProvider.expired)", "Bearer \(SequenceTokenProvider.fresh)",
            ])
        #expect(next.calls.map(\.body) == [Array(#"{"kcal":420}"#.utf8), Array(#"{"kcal":420}"#.utf8)])
        #expect(await provider.refreshCount == 1)
    }

    @Test func aSecond401IsUnauthorizedAfterRefresh() async throws {
        let next = Next([(401, nil), (401, "Bearer"), (200, nil)])
        await #expect(throws: NetworkRetryError.unauthorizedAfterRefresh) {
            try await middleware(SequenceTokenProvider()).intercept(
                request, body: HTTPBody("x"), baseURL: baseURL, operationID: "op", next: next.callAsFunction)
        }
        #expect(next.calls.count == 2)
    }

    @Test func insufficientScopeIsThrownWithoutARefresh() async throws {
        let provider = SequenceTokenProvider()
        let next = Next([(403, #"Bearer error="insufficient_scope", scope="meals""#)])
        await #expect(throws: NetworkRetryError.insufficientScope) {
            try await middleware(provider).intercept(
                request, body: nil, baseURL: baseURL, operationID: "op", next: next.callAsFunction)
        }
        #expect(await provider.refreshCount == 0)
    }

    @Test func aStreamTooLargeOrFailingIsATypedErrorAndNothingIsSent() async throws {
        let next = Next([(200, nil)])
        await #expect(throws: NetworkRetryError.bodyTooLarge) {
            try await middleware(SequenceTokenProvider(), limit: 8).intercept(
                request, body: Self.stream(["12345", "67890"]), baseURL: baseURL, operationID: "op",
                next: next.callAsFunction)
        }
        await #expect(throws: NetworkRetryError.bodyNotReplayable) {
            try await middleware(SequenceTokenProvider()).intercept(
                request, body: Self.stream(["12"], failing: true), baseURL: baseURL, operationID: "op",
                next: next.callAsFunction)
        }
        #expect(next.calls.isEmpty)
    }

    @Test func aServerOutsideTheAllowedOriginsGetsNoToken() async throws {
        let next = Next([(200, nil)])
        for url in ["https://evil.example.com", "http://api.example.com"] {
            await #expect(throws: NetworkRetryError.originNotAllowed) {
                try await middleware(SequenceTokenProvider()).intercept(
                    request, body: nil, baseURL: URL(string: url)!, operationID: "op", next: next.callAsFunction)
            }
        }
        #expect(next.calls.isEmpty)
    }
}
#endif

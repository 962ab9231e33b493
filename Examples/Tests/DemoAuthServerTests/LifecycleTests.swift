import DemoAuthServer
import Foundation
import Testing
import TokenKitLogCheck

@Suite("Starting and stopping", .logLeakCheck())
struct LifecycleTests {
    @Test func startsOnAFreeLoopbackPortAndStops() async throws {
        let server = DemoAuthServer(logger: testLogger)
        let url = try await server.start()
        #expect(url.host == "127.0.0.1")
        #expect((url.port ?? 0) > 0)
        #expect(server.baseURL == url)
        await #expect(throws: DemoAuthServerError.alreadyRunning) { try await server.start() }
        await server.stop()
        #expect(server.baseURL == nil)
        await server.stop()
    }

    @Test func restartingOnTheSamePortKeepsSessions() async throws {
        let server = DemoAuthServer(logger: testLogger)
        let first = TestClient(baseURL: try await server.start())
        let pair = try Pair(try await first.jsonLogin())
        first.close()
        await server.stop()

        let down = TestClient(baseURL: first.baseURL)
        await #expect(throws: (any Error).self) { try await down.jsonRefresh(pair.refreshToken) }
        down.close()

        let url = try await server.start(onPort: first.baseURL.port)
        #expect(url == first.baseURL)
        let again = TestClient(baseURL: url)
        #expect(try await again.jsonRefresh(pair.refreshToken).status == 200)
        again.close()
        await server.stop()
    }

    @Test func runServesUntilStopped() async throws {
        let server = DemoAuthServer(logger: testLogger)
        let (urls, continuation) = AsyncStream<URL>.makeStream()
        let running = Task {
            try await server.run(onPort: 0) { url in
                continuation.yield(url)
                continuation.finish()
            }
        }
        var iterator = urls.makeAsyncIterator()
        let url = try #require(await iterator.next())
        let client = TestClient(baseURL: url)
        #expect(try await client.jsonLogin().status == 200)
        client.close()
        await server.stop()
        try await running.value
        #expect(server.baseURL == nil)
    }

    @Test func aTakenPortFailsToStartWithAClearError() async throws {
        let holder = DemoAuthServer(logger: testLogger)
        let url = try await holder.start()
        let second = DemoAuthServer(logger: testLogger)
        await #expect(throws: DemoAuthServerError.startFailed) { try await second.start(onPort: url.port) }
        #expect(second.baseURL == nil)
        await holder.stop()
    }
}

import DemoAuthServer
import Testing
import TokenKitLogCheck

@Suite("Configuration", .logLeakCheck())
struct ConfigurationTests {
    @Test func descriptionsNeverShowPasswordsOrSecrets() {
        let configuration = DemoAuthServer.Configuration()
        var dumped = ""
        dump(configuration, to: &dumped)
        let printed = [
            String(describing: configuration), String(reflecting: configuration), dumped,
            String(describing: DemoAuthServer.User.demo), String(describing: DemoAuthServer.Client.confidentialBackend),
        ]
        for text in printed {
            let leaks = text.contains(DemoAuthServer.User.demo.password) || text.contains("demo-secret")
            #expect(!leaks)
        }
        #expect(String(describing: DemoAuthServer.User.demo).contains("demo@example.com"))
    }

    @Test func defaultsMatchTheREADME() {
        let configuration = DemoAuthServer.Configuration()
        #expect(configuration.port == 0)
        #expect(configuration.accessTokenLifetime == .seconds(900))
        #expect(configuration.graceWindow == .zero)
        #expect(configuration.reuseDetection)
        #expect(configuration.rotateRefreshTokens)
        #expect(configuration.apiKey == "demo-api-key")
        #expect(configuration.users == [.demo])
        #expect(configuration.clients.map(\.id) == ["demo-app", "demo-backend"])
    }
}

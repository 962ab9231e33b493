import Hummingbird
import NIOCore

/// The request context of the demo server: Hummingbird's basics plus the connection, so a fault can drop it.
struct DemoRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The connection the request arrived on.
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}

import Testing
import TokenKit
import TokenKitLogCheck

/// A token store written outside TokenKit's package (this package depends on TokenKit as any app does) attaches
/// a detail to the errors it throws, as TokenKit's own stores do.
@Suite(.logLeakCheck()) struct ThirdPartyStoreErrorTests {
    /// A store of an app's own, which reads a session row it cannot decode.
    struct RowStore {
        func load(row: Int) -> TokenStoreRead {
            .unavailable(PersistenceError.corrupt.with(detail: "row \(row) is not a session"))
        }
    }

    @Test func aStoreOutsideThePackageAttachesADetailToItsError() throws {
        guard case .unavailable(let error) = RowStore().load(row: 7) else {
            Issue.record("the row was read")
            return
        }
        #expect(error == .corrupt)
        #expect(error.detail == "row 7 is not a session")
        #expect("\(error)" == "PersistenceError.corrupt (row 7 is not a session)")
    }
}

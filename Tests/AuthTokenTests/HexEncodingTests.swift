import AuthToken
import Foundation
import Testing
import TokenKitLogCheck

/// The one hex writer the file names, digests and fingerprints use: two lowercase digits a byte, leading zeros kept.
@Suite(.logLeakCheck()) struct HexEncodingTests {
    @Test(
        arguments: [
            ([], ""),
            ([0x00], "00"),
            ([0x0f, 0xa0], "0fa0"),
            ([0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef], "0123456789abcdef"),
            ([0xff, 0x10, 0x09], "ff1009"),
        ] as [([UInt8], String)])
    func bytesAreTwoLowercaseDigitsEach(bytes: [UInt8], hex: String) {
        #expect(HexEncoding.encode(bytes) == hex)
    }

    @Test func everyByteMatchesFoundationsFormatting() {
        let bytes = (0...255).map { UInt8($0) }
        #expect(HexEncoding.encode(bytes) == bytes.map { String(format: "%02x", $0) }.joined())
    }
}

import Testing
import TetherDigest

/// FIPS 180 test vectors.
struct DigestTests {
    @Test(arguments: [
        ("", "da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ("abc", "a9993e364706816aba3e25717850c26c9cd0d89d"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "84983e441c3bd26ebaae4aa1f95129e5e54670f1"),
        ("The quick brown fox jumps over the lazy dog", "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
    ])
    func sha1Vectors(input: String, digest: String) {
        #expect(Digest.hex(Digest.sha1(Array(input.utf8))) == digest)
    }

    @Test func sha1OfAMillionAs() {
        #expect(Digest.hex(Digest.sha1([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))) == "34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    /// Lengths around the padding boundary (55, 56, 63, 64 bytes) exercise the one- and two-block tails.
    @Test(arguments: [
        (55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"),
        (56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"),
        (63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"),
        (64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"),
    ])
    func sha1PaddingBoundaries(count: Int, digest: String) {
        #expect(Digest.hex(Digest.sha1([UInt8](repeating: UInt8(ascii: "a"), count: count))) == digest)
    }

    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func sha256Vectors(input: String, digest: String) {
        #expect(Digest.hex(Digest.sha256(Array(input.utf8))) == digest)
    }

    @Test func hexKeepsLeadingZeros() {
        #expect(Digest.hex([0x00, 0x0f, 0xa0, 0xff]) == "000fa0ff")
        #expect(Digest.hex([]) == "")
    }
}

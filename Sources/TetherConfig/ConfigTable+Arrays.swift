extension ConfigTable {
    /// An array of secrets (`tokens = [{ env = "A" }, "literal"]`); each is named `key[i]` in errors.
    func secrets(_ key: String) throws -> [ConfiguredSecret]? {
        guard let value = entries[key] else { return nil }
        guard case .array(let items) = value else {
            throw error(.wrongType, key, problem: "must be an array of secrets, not \(value.typeName)",
                        fix: "write it as \(TOMLText.key(key)) = [{ env = \"NAME\" }] in \(header)")
        }
        return try items.enumerated().map { index, item in
            let name = "\(key)[\(index)]"
            let single = ConfigTable(entries: [name: item], path: path, file: file, environment: environment)
            return try single.secret(name)!
        }
    }

    /// An array of non-empty strings (a command's argv).
    func strings(_ key: String, example: String) throws -> [String]? {
        guard let value = entries[key] else { return nil }
        guard case .array(let items) = value else {
            throw error(.wrongType, key, problem: "must be an array of strings, not \(value.typeName)",
                        fix: "write it as \(TOMLText.key(key)) = \(example) in \(header)")
        }
        return try items.map { item in
            guard case .string(let text) = item, !text.isEmpty else {
                throw invalid(key, "every element must be a non-empty string", example: example)
            }
            return text
        }
    }

    /// A number (integer or float) in `range`.
    func number(_ key: String, in range: ClosedRange<Double>, example: String) throws -> Double? {
        guard let value = entries[key] else { return nil }
        let number: Double
        switch value {
        case .integer(let integer): number = Double(integer)
        case .float(let float): number = float
        default:
            throw error(.wrongType, key, problem: "must be a number, not \(value.typeName)",
                        fix: "write it as \(TOMLText.key(key)) = \(example) in \(header)")
        }
        guard range.contains(number) else {
            throw invalid(key, "\(number) is out of range (\(range.lowerBound)–\(range.upperBound))", example: example)
        }
        return number
    }
}

extension CollectionName {
    /// How far the one-time rollout of the devices' language topics got, one document (`LanguageRolloutDAO`).
    public static let languageRollout = "language_rollout"
}

@testable import FCM
import HubModel

/// Translations of `RelayMessage.sample`'s texts, as a school would write them.
enum Translations {
    static let hi = RelayMessage.Translation(
        language: "hi", title: "हिम दिवस", desc: "आज स्कूल बंद है",
        message: "बर्फ के कारण सोमवार को ज़िले के सभी स्कूल बंद हैं।")
    static let ta = RelayMessage.Translation(
        language: "ta", title: "பனி நாள்", desc: "இன்று பள்ளி மூடப்பட்டுள்ளது",
        message: "பனி காரணமாக திங்கள்கிழமை மாவட்டத்தின் அனைத்து பள்ளிகளும் மூடப்பட்டுள்ளன.")
    static let fr = RelayMessage.Translation(
        language: "fr", title: "Jour de neige", desc: "L'école est fermée aujourd'hui",
        message: "Toutes les écoles du district sont fermées lundi à cause de la neige.")
    static let de = RelayMessage.Translation(
        language: "de", title: "Schneetag", desc: "Die Schule ist heute geschlossen",
        message: "Alle Schulen im Bezirk sind am Montag wegen Schnee geschlossen.")
    static let es = RelayMessage.Translation(
        language: "es", title: "Día de nieve", desc: "La escuela está cerrada hoy",
        message: "Todas las escuelas del distrito están cerradas el lunes por la nieve.")
    static let mr = RelayMessage.Translation(
        language: "mr", title: "बर्फाचा दिवस", desc: "आज शाळा बंद आहे",
        message: "बर्फामुळे सोमवारी जिल्ह्यातील सर्व शाळा बंद आहेत.")

    /// Hindi and Tamil.
    static let two = [hi, ta]
    /// Six languages: four are sent separately, Spanish and Marathi go with the main text.
    static let six = [hi, ta, fr, de, es, mr]

    /// The sample message in English with `translations`.
    static func message(_ distribution: RelayMessage.Distribution = .alert, _ translations: [RelayMessage.Translation])
        -> RelayMessage
    {
        var message = RelayMessage.sample(distribution)
        message.language = "en"
        message.translations = translations
        return message
    }
}
